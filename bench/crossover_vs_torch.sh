#!/usr/bin/env bash
# The 4-band x 8191-tap stereo crossover per 1024-frame chunk, host memory in and out: Vigil's
# fir_bank stage (CPU, CUDA copy, CUDA mapped) against PyTorch conv1d, same machine, same run.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
chunks="${1:-20000}"
tmp=$(mktemp -d)
"$build/bench/crossover_latency_bench" "$chunks" >"$tmp/vigil.jsonl"
python3 bench/crossover_torch.py "$chunks" >"$tmp/torch.jsonl"
python3 - "$tmp" <<'PY'
import json, sys
rows = [json.loads(l) for f in ("vigil", "torch") for l in open(f"{sys.argv[1]}/{f}.jsonl")]
print("| per 1024-frame chunk, host in -> host out | chunks | p50 | p99 | p99.9 | max |")
print("|---|---|---|---|---|---|")
for r in rows:
    if "skipped" in r: print(f"| {r['stage']} | skipped: {r['skipped']} | | | | |"); continue
    print(f"| {r['stage']} | {r['chunks']} | {r['p50_us']:.1f} us | {r['p99_us']:.1f} us | {r['p999_us']:.1f} us | {r['max_us']:.1f} us |")
PY
rm -rf "$tmp"
