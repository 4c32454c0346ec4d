#!/usr/bin/env python3
"""S3's peers at equal latency (issue 51, items 2 and 6): the runner's --peers comparison with the
real zita-convolver (bench/zita_bank) and the real BruteFIR, briefly.

1. What the comparison parses, from samples of what the engines print (zita_bank's JSON line,
   BruteFIR 1.0m's stderr): a changed format fails here, not on benchmark day.
2. The BruteFIR config the runner writes: partitions of 256 frames covering 8191 taps, one filter
   per channel x band, each channel's filters in a process of its own.
3. End to end: scripts/bench_scenarios.py --peers on this build, one round of a few seconds of
   signal: both engines ran, their outputs matched direct convolution (zita_bank checks its own,
   the runner checks BruteFIR's on a short run), and the table, the ratios and the goals were
   printed with figures. Timings are not checked.

Usage: bench_peers_test.py SOURCE_DIR BUILD_DIR
"""
import json, os, re, subprocess, sys

src, build = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "scripts"))
import bench_peers  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


# 1. Samples of the engines' own output.
ZITA_SAMPLE = ('{"engine": "zita-convolver", "version": "4.0", "vector_mode": true, "maxpart": 2048, "rate_hz": 48000, '
               '"channels": 2, "bands": 4, "taps": 8191, "quantum": 256, "signal_s": 20, "elapsed_s": 0.107, '
               '"samples_per_s": 17943925.2, "x_realtime": 186.916, "cpu_cores": 1.000, '
               '"check_rel_rms_error": 4.03e-06, "checksum": -12.5}\n')
z = bench_peers.zita_result("zita_bank: planning\n" + ZITA_SAMPLE)
check(z is not None and z["x_realtime"] == 186.916 and z["check_rel_rms_error"] == 4.03e-06,
      f"zita_bank's line misread: {z}")
check(bench_peers.zita_result("") is None and bench_peers.zita_result("not json\n") is None,
      "no line, or a line that is not JSON, must read as no result")

BRUTEFIR_SAMPLE = """
BruteFIR v1.0m (November 2013)                                (c) Anders Torger

Internal resolution is 32 bit floating point.
Creating 4 FFTW plans of size 512...finished.
Loading 4 coefficient sets...finished.
Estimated CPU clock rate is 2694.862 MHz. CPU count is 2.
Audio processing starts now

Finished!
""".splitlines(keepends=True)
timed = [(10.0 + i, line) for i, line in enumerate(BRUTEFIR_SAMPLE)]
check(bench_peers.brutefir_times(timed) == (17.0, 19.0), f"BruteFIR's span misread: {bench_peers.brutefir_times(timed)}")
check(bench_peers.brutefir_version(timed) == "v1.0m", f"BruteFIR's version misread: {bench_peers.brutefir_version(timed)}")
check(bench_peers.brutefir_times(timed[:-1]) is None, "a run that did not finish must have no span")

BANK_SAMPLE = json.dumps({"context": {}, "benchmarks": [
    {"name": "BM_S3CrossoverStage/2/1/real_time", "run_type": "iteration", "real_time": 5044.2, "time_unit": "ns",
     "items_per_second": 101502939.7, "x_real_time": 1057.32}]})
check(bench_peers.bank_result(BANK_SAMPLE) == 1057.32, f"the bank's rate misread: {bench_peers.bank_result(BANK_SAMPLE)}")
check(bench_peers.bank_result(BANK_SAMPLE.replace("2/1/real_time", "1/1/real_time")) is None,
      "another benchmark's rate must not be taken for the bank's")

# 2. The config.
conf = bench_peers.brutefir_config(48000, 2, [(f"/t/c{b}.f32", 8191) for b in range(4)], "/t/in.raw", "/dev/null",
                                   "/t/wisdom")
check("filter_length: 256,32;" in conf, "8191 taps in partitions of 256 need 32 of them")
filters = re.findall(r'filter "f(\d)_(\d)" \{ from_inputs: "i(\d)"; to_outputs: "o(\d)_(\d)"; coeff: "c(\d)"; process: (\d);',
                     conf)
check(len(filters) == 8, f"expected 8 filters, found {len(filters)}")
for c, b, i, oc, ob, k, p in filters:
    check(c == i == oc == p and b == ob == k, f"filter f{c}_{b} is wired wrong")
check('channels: 8; dither: false;' in conf and 'channels: 2; };' in conf, "inputs or outputs of the wrong width")

# 3. The real engines through the runner.
if not os.access(os.path.join(build, "bench/zita_bank"), os.X_OK):
    failures.append("bench/zita_bank is not built (libzita-convolver-dev)")
else:
    cmd = [sys.executable, os.path.join(src, "scripts", "bench_scenarios.py"), "--backend", "cpu", "--build", build,
           "--only", "s3", "--steps", "s3:2x0", "--seconds", "1", "--host-probe-s", "0", "--peers",
           "--peers-rounds", "1", "--peers-signal-s", "4"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = run.stdout
    print(out)
    print(run.stderr, file=sys.stderr)
    check(run.returncode == 0, f"the runner exited with {run.returncode}")
    check("### S3 against zita-convolver and BruteFIR at 256-frame latency (1 rounds)" in out,
          "the comparison's heading is missing")
    row = re.search(r"^\| 1 \| ([\d.]+)x \(([\d.]+)\) \| ([\d.]+)x \(([\d.]+)\) \| ([\d.]+)x \(([\d.]+)\) "
                    r"\| ([\d.]+)x \| ([\d.]+)x \| ([\d.]+)x \| ([\d.]+)x \| ([\d.]+)x "
                    r"\| ([\d.]+)x \| ([\d.]+)x \| ([\d.]+)x \|$", out, re.M)
    check(row is not None, "round 1's row has no figure for one of the engines")
    if row:
        zita_x, _, brute_x, _, vigil_x, _, r_zita, r_brute = (float(v) for v in row.groups()[:8])
        check(zita_x > 0 and brute_x > 0 and vigil_x > 0, "an engine ran at 0x real time")
        check(abs(r_zita - vigil_x / zita_x) <= 0.01 * r_zita + 0.01, "the zita ratio is not Vigil's over zita's")
        check(abs(r_brute - vigil_x / brute_x) <= 0.01 * r_brute + 0.01, "the BruteFIR ratio is not Vigil's over its")
    errors = re.findall(r"relative RMS error ([\d.e+-]+)", out)
    check(len(errors) == 2 and all(float(e) < 1e-4 for e in errors),
          f"both engines' outputs must match direct convolution (relative RMS error < 1e-4): {errors}")
    check(re.search(r"chosen as the fastest of: (\d+( vector)? \d+x, ){7}\d+( vector)? \d+x;", out) is not None,
          "all eight zita-convolver option sets must have run")
    for goal in (">= 5x zita-convolver at 256 frames", ">= 5x BruteFIR at 256 frames"):
        line = next((l for l in out.splitlines() if goal in l), "")
        check(re.search(r"\| [\d.]+x (zita-convolver|BruteFIR), vigil-listen receiving \| (yes|\*\*no\*\*) \|$", line),
              f"the goal '{goal}' has no figure: {line!r}")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("bench_peers_test: ok")
