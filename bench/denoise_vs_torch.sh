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
# lanes and is not this comparison (it stopped the parsing below with an IndexError).
"$build/bench/denoise_cuda_bench" --benchmark_filter=BM_DenoiseDb8 --benchmark_repetitions=9 --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=true --benchmark_out="$tmp/vigil.json" --benchmark_out_format=json >/dev/null 2>&1
python3 bench/denoise_torch.py "$tmp/db8.json" 15 "$tmp/x.f32" "$tmp/torch.f32" >"$tmp/torch.jsonl"
python3 - "$tmp" <<'PY'
import json, sys
import numpy as np
tmp = sys.argv[1]
vigil = {}
for b in json.load(open(f"{tmp}/vigil.json"))["benchmarks"]:
    if b.get("aggregate_name") != "median" or "log2n:" not in b["run_name"]: continue
    vigil[int(b["run_name"].split("log2n:")[1].split("/")[0])] = b["real_time"]  # us
torch_t = {r["log2n"]: r for r in map(json.loads, open(f"{tmp}/torch.jsonl"))}
a, b = np.fromfile(f"{tmp}/vigil.f32", np.float32), np.fromfile(f"{tmp}/torch.f32", np.float32)
print(f"same output: relative L2 between Vigil and the PyTorch cascade on 2^16 samples = {np.linalg.norm(a - b) / np.linalg.norm(b):.2e}")
print("| N | Vigil (WaveletDenoiserCuda) | PyTorch conv1d cascade | PyTorch / Vigil | Vigil G samples/s |")
print("|---|---|---|---|---|")
for k in sorted(vigil):
    v, t = vigil[k], torch_t[k]["median_s"] * 1e6
    print(f"| 2^{k} | {v:.1f} us | {t:.1f} us | {t / v:.2f}x | {(1 << k) / v / 1e3:.2f} |")
print("PyTorch", next(iter(torch_t.values()))["torch"])
PY
rm -rf "$tmp"
