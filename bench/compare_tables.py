#!/usr/bin/env python3
"""The GPU comparison tables (bench/*_vs_*.sh): Vigil's Google Benchmark JSON against the peer's
JSON lines, one table each. Kept apart from the scripts so that a test
(tests/bench/compare_tables_test.py) can feed them the names the real benchmark binaries list: a
renamed benchmark then fails a test instead of a GPU run.

Usage: compare_tables.py fir|spectrum|denoise VIGIL_JSON PEER_JSONL
"""
import json
import sys


def medians(path):
    """run_name -> median real_time (us) of a Google Benchmark JSON file."""
    return {name: b["real_time"] for name, b in median_rows(path).items()}


def median_rows(path):
    """run_name -> the median row (its counters too) of a Google Benchmark JSON file."""
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") == "median":
            out[b["run_name"]] = b
    return out


def fir(vigil_json, cupy_jsonl):
    best, uniform = {}, {}  # per M: fastest of every form and layout; fastest uniform-partition layout
    direct = {}  # per M: the direct form's time and its share of the GPU's FP32 FMA peak
    for name, row in median_rows(vigil_json).items():
        us = row["real_time"]
        parts = name.split("/")
        kind, m = parts[0], parts[1]
        if kind == "BM_FirDirectCuda":
            peak, rate = row.get("fp32_fma_peak_per_s", 0), row.get("fma_per_s", 0)
            direct[int(m)] = (us / 1e6, rate / peak if peak else None)
            if int(m) not in best or us / 1e6 < best[int(m)][0]:
                best[int(m)] = (us / 1e6, "direct")
            continue
        if kind not in ("BM_FirBankCuda", "BM_OverlapSaveCuda"):
            continue
        arg = parts[2]
        t = us / 1e6
        what = ("FFT " if "OverlapSave" in kind else "uniform B ") + arg
        if int(m) not in best or t < best[int(m)][0]:
            best[int(m)] = (t, what)
        if kind == "BM_FirBankCuda" and (int(m) not in uniform or t < uniform[int(m)][0]):
            uniform[int(m)] = (t, what)
    peer = {r["m"]: r for r in map(json.loads, open(cupy_jsonl))}
    # Every peer the script measured (older files: oaconvolve alone, as median_s).
    names = list(next(iter(peer.values())).get("peers", {"cupy oaconvolve": None}))
    samples = 16 * (1 << 20)
    lines = ["| taps M | Vigil CUDA (layout) | G samples/s | " + " | ".join(names) +
             " | best peer | Vigil / best peer | Vigil uniform partitions | Vigil direct form (share of FP32 FMA peak) |",
             "|---|---|---|" + "---|" * len(names) + "---|---|---|---|"]
    for m in sorted(best):
        t, what = best[m]
        r = peer[m]
        times = r.get("peers", {"cupy oaconvolve": r["median_s"]})
        b = r.get("best", names[0])
        cells = " | ".join(f"{times[n]*1e3:.3f} ms" for n in names)
        tu, wu = uniform[m]
        dcell = "–"
        if m in direct:
            td, share = direct[m]
            dcell = f"{td*1e3:.3f} ms" + (f" ({share*100:.0f} %)" if share is not None else "")
        lines.append(f"| {m} | {t*1e3:.3f} ms ({what}) | {samples/t/1e9:.1f} | {cells} | {b} | "
                     f"{r['median_s']/t:.2f}x | {tu*1e3:.3f} ms ({wu}) | {dcell} |")
    first = next(iter(peer.values()))
    checks = "; ".join(f"M={m} " + ", ".join(f"{n} {e:.1e}" for n, e in r.get("checks", {}).items())
                       for m, r in sorted(peer.items()) if r.get("checks"))
    lines.append(f"CuPy {first['cupy']}" + (f", PyTorch {first['torch']}" if first.get("torch") else "") +
                 (f"; each peer's first channel against oaconvolve's, relative L2: {checks}" if checks else ""))
    return lines


def spectrum(vigil_json, cupy_jsonl):
    vigil = {}
    for name, us in medians(vigil_json).items():
        args = dict(a.split(":") for a in name.split("/")[1:] if ":" in a)
        if {"rows", "n", "mode"} <= args.keys():
            vigil[(int(args["rows"]), int(args["n"]), int(args["mode"]))] = us
    cupy = {(r["rows"], r["n"]): r for r in map(json.loads, open(cupy_jsonl))}
    lines = ["| shape | Vigil, stream (3 launches) | Vigil, CUDA Graph | CuPy (cp.abs(cp.fft.rfft(x * w))) | "
             "CuPy / Vigil stream | CuPy / Vigil graph |", "|---|---|---|---|---|---|"]
    for rows, n in ((64, 1024), (1, 65536)):
        s, g, c = vigil[(rows, n, 0)], vigil[(rows, n, 1)], cupy[(rows, n)]["median_s"] * 1e6
        lines.append(f"| {rows} x {n} | {s:.2f} us | {g:.2f} us | {c:.2f} us | {c/s:.2f}x | {c/g:.2f}x |")
    if (1, 4096, 2) in vigil:
        lines.append(f"Welch PSD of 2^20 samples, nperseg 4096 (511 segments, one batch): {vigil[(1, 4096, 2)]:.1f} us")
    lines.append(f"CuPy {next(iter(cupy.values()))['cupy']}")
    return lines


def denoise(vigil_json, torch_jsonl):
    vigil = {int(name.split("log2n:")[1].split("/")[0]): us
             for name, us in medians(vigil_json).items() if name.startswith("BM_DenoiseDb8/log2n:")}
    torch_t = {r["log2n"]: r for r in map(json.loads, open(torch_jsonl))}
    lines = ["| N | Vigil (WaveletDenoiserCuda) | PyTorch conv1d cascade | PyTorch / Vigil | Vigil G samples/s |",
             "|---|---|---|---|---|"]
    for k in sorted(vigil):
        v, t = vigil[k], torch_t[k]["median_s"] * 1e6
        lines.append(f"| 2^{k} | {v:.1f} us | {t:.1f} us | {t / v:.2f}x | {(1 << k) / v / 1e3:.2f} |")
    lines.append(f"PyTorch {next(iter(torch_t.values()))['torch']}")
    return lines


TABLES = {"fir": fir, "spectrum": spectrum, "denoise": denoise}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in TABLES:
        sys.exit("usage: compare_tables.py fir|spectrum|denoise VIGIL_JSON PEER_JSONL")
    print("\n".join(TABLES[sys.argv[1]](sys.argv[2], sys.argv[3])))
