#!/usr/bin/env python3
"""The scenario runner (scripts/bench-scenarios.sh, issue 9) when its input or a step goes wrong:
bad arguments are refused before anything runs (exit 2, the option named, no traceback); a step
whose vigild refuses its config, and a step whose vigild outlives its time limit, each become a
table row that says so, and the runner goes on to the next scenario instead of stopping with a
traceback or waiting. Real parts: the real vigild and vigil-listen; the fault is a broken config and
a time limit shorter than the run.

Usage: bench_scenarios_failures.py SOURCE_DIR BUILD_DIR"""
import json, os, shutil, subprocess, sys, tempfile, time

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def runner(source, args, grace_s=None, timeout=300):
    """The runner with args; grace_s replaces its GRACE_S (how long past --seconds a step may run)."""
    scripts = os.path.join(source, "scripts")
    code = (f"import sys; sys.path.insert(0, {scripts!r}); import bench_scenarios as b; "
            + (f"b.GRACE_S = {grace_s!r}; " if grace_s is not None else "")
            + "sys.argv[0] = 'bench_scenarios.py'; b.main()")
    return subprocess.run([sys.executable, "-c", code] + args, capture_output=True, text=True, timeout=timeout)


def bad_arguments(source, build):
    cases = [
        (["--seconds", "0"], "--seconds must be a number of seconds above 0"),
        (["--seconds", "-1"], "--seconds must be a number of seconds above 0"),
        (["--failures", "0"], "--failures must be at least 1"),
        (["--repeat", "0"], "--repeat must be at least 1"),
        (["--gnuradio-rounds", "0"], "--gnuradio-rounds must be at least 1"),
        (["--host-probe-s", "-1"], "--host-probe-s must be 0"),
        (["--steps", "s3:0x1"], "a step needs at least 1 channel"),
        (["--steps", "s9:1x1"], "expected SCEN:CHxRF"),
        (["--only", "s7"], "unknown scenario 's7'"),
        (["--build", "/nonexistent/build"], "--build /nonexistent/build: no /nonexistent/build/apps/vigild"),
        (["--scenarios", "/nonexistent/scen", "--only", "s2"], "no s2-vibration.yaml for s2"),
    ]
    for extra, expected in cases:
        args = ["--build", build] + extra
        t0 = time.monotonic()
        run = runner(source, args, timeout=60)
        took = time.monotonic() - t0
        what = " ".join(extra)
        check(run.returncode == 2, f"{what}: exit {run.returncode}, expected 2 ({run.stderr.strip()[-300:]})")
        check(expected in run.stderr, f"{what}: stderr lacks {expected!r}: {run.stderr.strip()[-300:]!r}")
        check("Traceback" not in run.stderr, f"{what}: a traceback instead of an error")
        check(run.stdout == "", f"{what}: something ran before the refusal: {run.stdout[:200]!r}")
        check(took < 30, f"{what}: the refusal took {took:.1f} s")


def failing_steps(source, build, tmp):
    # S2's config broken the way an edit breaks it (an unknown key), S3's as shipped.
    scen = os.path.join(tmp, "scenarios")
    shutil.copytree(os.path.join(source, "bench", "scenarios"), scen)
    s2 = os.path.join(scen, "s2-vibration.yaml")
    text = open(s2).read()
    open(s2, "w").write(text.replace("outputs:", "outptus: []\noutputs:", 1))
    rows_path = os.path.join(tmp, "rows.jsonl")
    # S3 runs 3 s a step, but may take only 1 s in all (GRACE_S -2): vigild is killed in mid-run.
    args = ["--backend", "cpu", "--build", build, "--scenarios", scen, "--only", "s2,s3", "--seconds", "3",
            "--failures", "1", "--host-probe-s", "0", "--json", rows_path, "--steps", "s2:2x1", "--steps", "s3:2x3"]
    t0 = time.monotonic()
    run = runner(source, args, grace_s=-2)
    took = time.monotonic() - t0
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    check(run.returncode == 0, f"the runner exited with {run.returncode}")
    check("Traceback" not in run.stderr, "a traceback")
    rows = [json.loads(line) for line in open(rows_path)] if os.path.exists(rows_path) else []
    check([r["scenario"] for r in rows] == ["s2", "s3"], f"expected a row for s2 and for s3, got {rows}")
    if len(rows) == 2:
        s2_row, s3_row = rows
        check(s2_row.get("rc") == 2, f"s2: vigild's exit {s2_row.get('rc')}, expected 2 (a config error)")
        err = s2_row.get("error", "")
        check("no final status (vigild exit 2: " in err and "outptus" in err,
              f"s2: the row does not give vigild's exit and its config error: {err!r}")
        err = s3_row.get("error", "")
        check(s3_row.get("rc") is None and "vigild hung: still running 1 s after its start (killed)" in err,
              f"s3: the row does not say vigild was killed: {s3_row}")
        check(s3_row.get("wall_s", 99) < 2.5, f"s3: the step took {s3_row.get('wall_s')} s, its limit was 1 s")
    for line in ("| 2 | 1 | no final status (vigild exit 2: ", "| 2 | 3 | vigild hung: "):
        check(line in run.stdout, f"no table row with {line!r}")
    check(run.stdout.count("No load step ran without misses or drops.") == 2, "a scenario's verdict line is missing")
    check(took < 60, f"the runner took {took:.0f} s")
    # The killed vigild is gone (its config is the step's, in the runner's own temporary folder).
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and "s3-2-3.yaml" in cmdline(pid)]
    check(not left, f"the killed step left processes: {left}")


def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def main():
    source, build = sys.argv[1], sys.argv[2]
    bad_arguments(source, build)
    with tempfile.TemporaryDirectory() as tmp:
        failing_steps(source, build, tmp)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
