#!/usr/bin/env python3
"""Two vigild builds against each other on one scenario, unpaced, alternating (A B A B ...), so
that the machine's drift hits both alike: each run fills bench/scenarios/<scenario> (rate factor
0, the given channels, CPU backend), sends the data to a socket that never reads it and the events
to a socket nobody answers, and prints the input rate from vigild's last line as x real time.
Usage: bench/scenario_ab.py OLD_VIGILD NEW_VIGILD [--scenario s2] [--channels 64] [--runs 3] [--seconds 6]"""
import argparse, os, re, socket, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from bench_scenarios import FILES, RATES  # noqa: E402  (the scenarios' files and sample rates)

p = argparse.ArgumentParser()
p.add_argument("old")
p.add_argument("new")
p.add_argument("--scenario", default="s2", choices=sorted(FILES))
p.add_argument("--channels", type=int, default=64)
p.add_argument("--runs", type=int, default=3)
p.add_argument("--seconds", type=float, default=6)
a = p.parse_args()

sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sink.bind(("127.0.0.1", 0))
events = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
events.bind(("127.0.0.1", 0))
work = tempfile.mkdtemp(prefix="vigil-ab-")
text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios", FILES[a.scenario])).read()
for k, v in {"CHANNELS": a.channels, "RATE_FACTOR": 0, "BACKEND": "cpu", "BUSY_POLL": "false", "THREADS": 0, "SEND_THREADS": 1,
             "DATA_PORT": sink.getsockname()[1], "EVENT_PORT": events.getsockname()[1],
             "WISDOM": os.path.join(work, "fftwf.wisdom")}.items():
    text = text.replace(f"@{k}@", str(v))
config = os.path.join(work, "config.yaml")
open(config, "w").write(text)
subprocess.run([a.new, "--config", config, "--seconds", "0.5", "--log-interval", "0"], capture_output=True)  # plans once
results = {a.old: [], a.new: []}
for _ in range(a.runs):
    for binary in (a.old, a.new):
        err = subprocess.run([binary, "--config", config, "--seconds", str(a.seconds), "--log-interval", "0"],
                             capture_output=True, text=True).stderr
        chunks = int(re.search(r"chunks in (\d+)", err).group(1))
        secs = float(re.search(r"stopped after ([0-9.]+) s", err).group(1))
        frames = chunks * int(re.search(r"chunk_frames: (\d+)", text).group(1))
        results[binary].append(frames / secs / RATES[a.scenario])
for binary, xs in results.items():
    print(f"{binary}: " + " ".join(f"{x:.2f}x" for x in xs))
