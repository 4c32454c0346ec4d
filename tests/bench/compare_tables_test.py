#!/usr/bin/env python3
"""The GPU comparison tables read the names the real benchmark binaries give (issue 51, item 6).

For each comparison script (bench/*_vs_*.sh) built on Google Benchmark: the benchmark binary of
this build lists its runs with the script's own --benchmark_filter (no GPU needed to list), a
Google Benchmark JSON file is made of those names (the medians, times made up), the peer's rows
are those its script writes (the sizes each goal names), and bench/compare_tables.py must make a
row of every size from them. A renamed benchmark, an argument the table misreads, or a size only
one side has fails here instead of on the GPU machine (both happened there: an IndexError,
2026-11-29, and a KeyError, 2026-12-05).

Usage: compare_tables_test.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

src, build = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "bench"))
import compare_tables  # noqa: E402

# (table, script, binary, the peer's rows, what each row of the table starts with)
CASES = [
    ("fir", "fir_cuda_vs_cupy.sh", "fir_cuda_bench",
     [{"m": m, "median_s": 1e-3, "cupy": "test"} for m in (64, 256, 1024, 8192)],
     [f"| {m} | " for m in (64, 256, 1024, 8192)]),
    ("fir", "fir_cuda_vs_cupy.sh", "fir_cuda_bench",
     [{"m": m, "median_s": 9e-4, "best": "torch conv1d", "cupy": "test", "torch": "test",
       "peers": {"cupy oaconvolve": 1e-3, "cupy fftconvolve": 2e-3, "torch conv1d": 9e-4},
       "checks": {"cupy fftconvolve": 1e-7, "torch conv1d": 2e-7}} for m in (64, 256, 1024, 8192)],
     [f"| {m} | " for m in (64, 256, 1024, 8192)] + ["CuPy test, PyTorch test; each peer"]),
    ("spectrum", "spectrum_vs_cupy.sh", "spectrum_cuda_bench",
     [{"rows": r, "n": n, "median_s": 1e-5, "cupy": "test"} for r, n in ((64, 1024), (1, 65536))],
     ["| 64 x 1024 |", "| 1 x 65536 |", "Welch PSD"]),
    ("denoise", "denoise_vs_torch.sh", "denoise_cuda_bench",
     [{"log2n": k, "median_s": 1e-4, "torch": "test"} for k in range(16, 27, 2)],
     [f"| 2^{k} |" for k in range(16, 27, 2)]),
]

failed = 0
for table, script, binary, peer_rows, want in CASES:
    text = open(os.path.join(src, "bench", script)).read()
    # The script's own filter for the benchmark it runs (none: every benchmark of the binary).
    m = re.search(r'bench/%s"?\s+[^\n]*?--benchmark_filter=(\'[^\']*\'|\S+)' % binary, text)
    listing = [os.path.join(build, "bench", binary), "--benchmark_list_tests"]
    if m:
        listing.append("--benchmark_filter=" + m.group(1).strip("'"))
    names = subprocess.run(listing, check=True, capture_output=True, text=True).stdout.split()
    with tempfile.TemporaryDirectory() as tmp:
        vigil = os.path.join(tmp, "vigil.json")
        json.dump({"benchmarks": [{"run_name": n, "aggregate_name": "median", "real_time": 10.0 + i}
                                  for i, n in enumerate(names)]}, open(vigil, "w"))
        peer = os.path.join(tmp, "peer.jsonl")
        open(peer, "w").write("".join(json.dumps(r) + "\n" for r in peer_rows))
        try:
            lines = compare_tables.TABLES[table](vigil, peer)
        except Exception as e:  # noqa: BLE001: the failure is the finding
            print(f"FAIL {script}: {binary}'s {len(names)} benchmarks: {type(e).__name__}: {e}")
            failed += 1
            continue
    missing = [w for w in want if not any(line.startswith(w) for line in lines)]
    if missing:
        print(f"FAIL {script}: no row for {missing} in\n  " + "\n  ".join(lines))
        failed += 1
    else:
        print(f"ok {script}: {len(names)} benchmarks of {binary} give every row ({len(want)}) of its table")
sys.exit(1 if failed else 0)
