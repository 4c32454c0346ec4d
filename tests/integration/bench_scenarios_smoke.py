#!/usr/bin/env python3
"""The scenario runner (scripts/bench-scenarios.sh, issue 9) end to end, briefly: the real vigild
on each of bench/scenarios' configs at one light load step, vigil-listen receiving, the host probe
before them. Checks what the runner reports, not how fast the machine is (timings belong in the
benchmarks): every step ran, its figures are consistent and came from vigild's and vigil-listen's
own counters, and the tables and the host's floor were printed.

Usage: bench_scenarios_smoke.py SOURCE_DIR BUILD_DIR"""
import json, os, subprocess, sys, tempfile

# One light step per scenario: S1 one channel at real time (10 M samples/s), S2 four channels,
# S3 its two.
STEPS = {"s1": (1, 1), "s2": (4, 1), "s3": (2, 1)}
RATES = {"s1": 10_000_000, "s2": 51_200, "s3": 48_000}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    source, build = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        rows_path = os.path.join(tmp, "rows.jsonl")
        cmd = [sys.executable, os.path.join(source, "scripts", "bench_scenarios.py"), "--backend", "cpu",
               "--seconds", "1", "--only", "s1,s2,s3", "--failures", "1", "--host-probe-s", "0.3",
               "--build", build, "--json", rows_path]
        for scen, (ch, rf) in STEPS.items():
            cmd += ["--steps", f"{scen}:{ch}x{rf}"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        out = run.stdout
        print(out)
        print(run.stderr, file=sys.stderr)
        check(run.returncode == 0, f"the runner exited with {run.returncode}")
        rows = [json.loads(line) for line in open(rows_path)] if os.path.exists(rows_path) else []

    check("### The host, before the runs" in out and "spinning: gaps > 10 us:" in out
          and "sleeping: " in out, "the host probe's lines are missing")
    check([r["scenario"] for r in rows] == ["s1", "s2", "s3"], f"expected one row per scenario, got {len(rows)}")
    for r in rows:
        scen = r["scenario"]
        ch, rf = STEPS[scen]
        name = f"{scen} {ch} ch x{rf}"
        if "error" in r:
            failures.append(f"{name}: {r['error']}")
            continue
        check(r["rc"] == 0, f"{name}: vigild exited with {r['rc']}")
        check(r["backend"] == "cpu", f"{name}: backend {r['backend']!r}")
        check(r["channels"] == ch and r["rate_factor"] == rf, f"{name}: the row is for another step")
        nominal = RATES[scen] * ch * rf
        check(r["nominal_per_s"] == nominal, f"{name}: offered {r['nominal_per_s']} samples/s, expected {nominal}")
        # The source is paced: with nothing dropped, vigild's own rate from its first chunk out to its
        # last is the offered one (a tenth either way for the ends). On a machine busy with other
        # tests vigild may fall behind and drop: then the rate is lower, but never zero or above.
        low = 0.9 if r["dropped_frames"] == 0 else 0.01
        check(low * nominal <= r["samples_per_s"] <= 1.1 * nominal,
              f"{name}: sustained {r['samples_per_s']:.0f} samples/s of {nominal} offered, "
              f"{r['dropped_frames']} frames dropped")
        lat = r["latency_us"]
        check(0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"],
              f"{name}: latency percentiles out of order or zero: {lat}")
        for key in ("deadline_misses", "dropped_frames", "send_errors", "lost_at_receiver", "source_late_chunks"):
            check(isinstance(r[key], int) and r[key] >= 0, f"{name}: {key} = {r[key]!r}")
        check(r["ok"] == (r["deadline_misses"] == 0 and r["dropped_frames"] == 0 and r["send_errors"] == 0
                          and r["lost_at_receiver"] == 0 and r["source_late_chunks"] == 0),
              f"{name}: 'ok' disagrees with its counts")
        host = r["host"]
        check(host["own_cores"] > 0, f"{name}: vigild and vigil-listen took no CPU time: {host}")
        fir = r["fir_stages"]
        check(len(fir) == 1, f"{name}: expected one FIR stage, got {sorted(fir)}")
        for stage, st in fir.items():
            check(st["form"] not in ("", "?") and st["delay_frames"] > 0, f"{name}: FIR stage {stage}: {st}")
        row = f"| {ch} | {rf} | "
        check(any(line.startswith(row) for line in out.splitlines()), f"{name}: no table row starting {row!r}")
    check(out.count("The host meanwhile, per step:") == 3, "a scenario's host-load line is missing")
    check(out.count("Highest load with zero misses") + out.count("No load step ran without misses") == 3,
          "a scenario's verdict line is missing")
    # Last, the goals for the backend that ran (issue 51's: on the CPU, ratios to the peers), each
    # with this run's figure and a verdict; the comparisons (--gnuradio, --peers) did not run.
    goals = out.split("### Against the goals for the CPU, ratios to the peers on the same cores (backend cpu)", 1)
    check(len(goals) == 2, "the goals table is missing")
    if len(goals) == 2:
        lines = [l for l in goals[1].splitlines() if l.startswith("| S")]
        check(len(lines) == 5, f"expected 5 goals, got {lines}")
        expected = [("| S1 | report the sustainable channel count | ", "| reported |"),
                    ("| S2 | >= 2x GNU Radio, same run, at its filter delay | the comparison did not run (--gnuradio)",
                     "| not run |"),
                    ("| S3 | >= 1.5x GNU Radio at its delay | the comparison did not run (--gnuradio)", "| not run |"),
                    ("| S3 | >= 5x zita-convolver at 256 frames | the comparison did not run (--peers)", "| not run |"),
                    ("| S3 | >= 5x BruteFIR at 256 frames | the comparison did not run (--peers)", "| not run |")]
        for line, (start, end) in zip(lines, expected):
            check(line.startswith(start) and line.endswith(end), f"goal line {line!r}: expected {start!r}...{end!r}")

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
