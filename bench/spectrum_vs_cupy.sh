#!/usr/bin/env bash
# Vigil's GPU spectrum (Hann -> rFFT -> magnitude) against CuPy's, same GPU, same run.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
tmp=$(mktemp -d)
"$build/bench/spectrum_cuda_bench" --benchmark_repetitions=15 --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=true --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/spectrum_cupy.py 200 >"$tmp/cupy.jsonl"
python3 - "$tmp/vigil.json" "$tmp/cupy.jsonl" <<'PY'
import json, sys
vigil = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median": continue
    args = dict(a.split(":") for a in b["run_name"].split("/")[1:] if ":" in a)
    vigil[(int(args["rows"]), int(args["n"]), int(args["mode"]))] = b["real_time"]  # us
cupy = {(r["rows"], r["n"]): r for r in map(json.loads, open(sys.argv[2]))}
print("| shape | Vigil, stream (3 launches) | Vigil, CUDA Graph | CuPy (cp.abs(cp.fft.rfft(x * w))) | CuPy / Vigil stream | CuPy / Vigil graph |")
print("|---|---|---|---|---|---|")
for rows, n in ((64, 1024), (1, 65536)):
    s, g, c = vigil[(rows, n, 0)], vigil[(rows, n, 1)], cupy[(rows, n)]["median_s"] * 1e6
    print(f"| {rows} x {n} | {s:.2f} us | {g:.2f} us | {c:.2f} us | {c/s:.2f}x | {c/g:.2f}x |")
if (1, 4096, 2) in vigil:
    print(f"Welch PSD of 2^20 samples, nperseg 4096 (511 segments, one batch): {vigil[(1, 4096, 2)]:.1f} us")
print("CuPy", next(iter(cupy.values()))["cupy"])
PY
rm -rf "$tmp"
