#!/usr/bin/env bash
# Vigil's CUDA FIR bank against CuPy's oaconvolve, same GPU, same run (see the two files it runs).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
tmp=$(mktemp -d)
# Only the whole-signal benchmarks CuPy is compared with (the chunk benchmarks beside them take a
# form as their first argument, which the parsing below would read as M: KeyError 0, 2026-12-05).
"$build/bench/fir_cuda_bench" --benchmark_filter='BM_FirBankCuda/|BM_OverlapSaveCuda/' --benchmark_repetitions=5 --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true \
  --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/fir_cupy.py 15 >"$tmp/cupy.jsonl"
python3 - "$tmp/vigil.json" "$tmp/cupy.jsonl" <<'PY'
import json, sys
best = {}      # per M: fastest of both layouts
uniform = {}   # per M: fastest uniform-partition (low-latency) layout
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median": continue
    kind, m, arg = b["run_name"].split("/")[:3]
    if kind not in ("BM_FirBankCuda", "BM_OverlapSaveCuda"): continue
    t = b["real_time"] / 1e6  # us -> s
    what = ("FFT " if "OverlapSave" in kind else "uniform B ") + arg
    if int(m) not in best or t < best[int(m)][0]: best[int(m)] = (t, what)
    if "FirBankCuda" in kind and (int(m) not in uniform or t < uniform[int(m)][0]): uniform[int(m)] = (t, what)
cupy = {r["m"]: r for r in map(json.loads, open(sys.argv[2]))}
samples = 16 * (1 << 20)
print("| taps M | Vigil CUDA (layout) | G samples/s | CuPy oaconvolve | G samples/s | ratio | Vigil uniform partitions |")
print("|---|---|---|---|---|---|---|")
for m in sorted(best):
    t, what = best[m]; c = cupy[m]["median_s"]; tu, wu = uniform[m]
    print(f"| {m} | {t*1e3:.3f} ms ({what}) | {samples/t/1e9:.1f} | {c*1e3:.3f} ms | {samples/c/1e9:.1f} | {c/t:.2f}x | {tu*1e3:.3f} ms ({wu}) |")
print("CuPy", next(iter(cupy.values()))["cupy"])
PY
rm -rf "$tmp"
