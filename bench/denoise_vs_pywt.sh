#!/usr/bin/env bash
# Vigil's WaveletDenoiser against PyWavelets doing the same (db8, periodization, max level, soft
# VisuShrink) on 2^16..2^24 samples, single thread, same machine, same run. Prints a table of
# medians and ratios. Needs python3-pywt (apt-get install python3-pywt) and a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
reps="${REPS:-7}"
tmp=$(mktemp -d)
"$build/bench/denoise_bench" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
/usr/bin/python3 bench/denoise_pywt.py "$reps" >"$tmp/pywt.jsonl"
/usr/bin/python3 - "$tmp/vigil.json" "$tmp/pywt.jsonl" <<'PY'
import json, sys
v = {int(b["run_name"].split("/")[1]): b["real_time"] / 1e3 for b in json.load(open(sys.argv[1]))["benchmarks"]
     if b.get("aggregate_name") == "median"}   # ms -> s
p = {}
for line in open(sys.argv[2]):
    r = json.loads(line); p[(r["n"], r["dtype"])] = r["median_s"]
print("| samples | Vigil (float32) | PyWavelets float64 | ratio | PyWavelets float32 | ratio |")
print("|---|---|---|---|---|---|")
for n in sorted(v):
    f64, f32 = p[(n, "float64")], p[(n, "float32")]
    print(f"| 2^{n.bit_length()-1} | {v[n]*1e3:.2f} ms | {f64*1e3:.2f} ms | {f64/v[n]:.2f}x | {f32*1e3:.2f} ms | {f32/v[n]:.2f}x |")
PY
rm -rf "$tmp"
