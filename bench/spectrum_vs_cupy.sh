#!/usr/bin/env bash
# Vigil's GPU spectrum (Hann -> rFFT -> magnitude) against CuPy's, same GPU, same run.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
tmp=$(mktemp -d)
"$build/bench/spectrum_cuda_bench" --benchmark_repetitions=15 --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=true --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/spectrum_cupy.py 200 >"$tmp/cupy.jsonl"
python3 bench/compare_tables.py spectrum "$tmp/vigil.json" "$tmp/cupy.jsonl"
rm -rf "$tmp"
