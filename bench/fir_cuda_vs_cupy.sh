#!/usr/bin/env bash
# Vigil's CUDA FIR bank against CuPy (oaconvolve, fftconvolve) and PyTorch (conv1d), same GPU, same run.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
tmp=$(mktemp -d)
# Only the whole-signal benchmarks CuPy is compared with (the chunk benchmarks beside them take a
# form as their first argument, which the table would read as M: KeyError 0, 2026-12-05).
"$build/bench/fir_cuda_bench" --benchmark_filter='BM_FirBankCuda/|BM_OverlapSaveCuda/|BM_FirDirectCuda/' --benchmark_repetitions=5 --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true \
  --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/fir_cupy.py 15 >"$tmp/cupy.jsonl"
python3 bench/compare_tables.py fir "$tmp/vigil.json" "$tmp/cupy.jsonl"
rm -rf "$tmp"
