#!/usr/bin/env bash
# Vigil's GPU db8 denoise against a PyTorch conv1d cascade doing the same, same GPU, same run; and
# a check that the two give the same output (relative L2 on 2^16 samples).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
tmp=$(mktemp -d)
"$build/bench/denoise_cuda_bench" --print-filters db8 >"$tmp/db8.json"
python3 -c "import numpy as np; t=np.arange(65536); np.random.seed(2); (np.sin(0.001*t)+0.2*np.random.randn(65536)).astype(np.float32).tofile('$tmp/x.f32')"
"$build/apps/vigil-dsp" denoise --backend cuda --wavelet db8 --in "$tmp/x.f32" --out "$tmp/vigil.f32"
# The one-shot denoise by length (named log2n:N): the streaming S1 benchmark beside it is named by
# lanes and is not this comparison (it stopped the table with an IndexError).
"$build/bench/denoise_cuda_bench" --benchmark_filter=BM_DenoiseDb8 --benchmark_repetitions=9 --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=true --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/denoise_torch.py "$tmp/db8.json" 15 "$tmp/x.f32" "$tmp/torch.f32" >"$tmp/torch.jsonl"
python3 - "$tmp" <<'PY'
import sys
import numpy as np
tmp = sys.argv[1]
a, b = np.fromfile(f"{tmp}/vigil.f32", np.float32), np.fromfile(f"{tmp}/torch.f32", np.float32)
print(f"same output: relative L2 between Vigil and the PyTorch cascade on 2^16 samples = {np.linalg.norm(a - b) / np.linalg.norm(b):.2e}")
PY
python3 bench/compare_tables.py denoise "$tmp/vigil.json" "$tmp/torch.jsonl"
rm -rf "$tmp"
