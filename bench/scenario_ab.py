#!/usr/bin/env python3
"""Two vigild builds against each other on one scenario, unpaced, alternating (A B A B ...), so
that the machine's drift hits both alike: each run fills bench/scenarios/<scenario> (rate factor
0, the given channels, CPU backend), sends the data to a socket that never reads it (or to
vigil-listen: --listen) and the events to a socket nobody answers, and prints the rate of chunks
out from vigild's last line as x real time.
Usage: bench/scenario_ab.py OLD_VIGILD NEW_VIGILD [--scenario s2] [--channels 64] [--runs 3] [--seconds 6] [--threads 2]
         [--new-threads 2] [--new-output "framing: vrl, jumbo: true"] [--listen build/apps/vigil-listen]
         [--new-listen-flags=--gro]
--new-threads sets pipeline.threads of NEW's runs only, --new-output adds keys to the vita49 output of
NEW's runs only, --new-listen-flags options to NEW's vigil-listen only (the same binary twice then
compares two configurations)."""
import argparse, os, re, signal, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from bench_scenarios import FILES, RATES  # noqa: E402  (the scenarios' files and sample rates)

p = argparse.ArgumentParser()
p.add_argument("old")
p.add_argument("new")
p.add_argument("--scenario", default="s2", choices=sorted(FILES))
p.add_argument("--channels", type=int, default=64)
p.add_argument("--runs", type=int, default=3)
p.add_argument("--seconds", type=float, default=6)
p.add_argument("--threads", type=int, default=0,
               help="pipeline.threads (0: one per core less one; the runner uses 2 for the CPU's S1 and S2)")
p.add_argument("--new-threads", type=int, help="pipeline.threads for NEW's runs only (default: --threads)")
p.add_argument("--new-output", default="")
p.add_argument("--listen", help="vigil-listen binary: it receives the data (on the same cores) instead of a socket nobody reads")
p.add_argument("--listen-flags", default="", help="options for both runs' vigil-listen (e.g. --gro)")
p.add_argument("--new-listen-flags", default="", help="options for NEW's vigil-listen only (e.g. --gro)")
a = p.parse_args()

sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sink.bind(("127.0.0.1", 0))
data_port = sink.getsockname()[1]
if a.listen:  # vigil-listen takes the port
    sink.close()
events = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
events.bind(("127.0.0.1", 0))
work = tempfile.mkdtemp(prefix="vigil-ab-")
text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios", FILES[a.scenario])).read()
for k, v in {"CHANNELS": a.channels, "RATE_FACTOR": 0, "BACKEND": "cpu", "BUSY_POLL": "false", "THREADS": a.threads, "SEND_THREADS": 1,
             "DATA_PORT": data_port, "EVENT_PORT": events.getsockname()[1],
             "WISDOM": os.path.join(work, "fftwf.wisdom")}.items():
    text = text.replace(f"@{k}@", str(v))
configs = {"A": os.path.join(work, "a.yaml"), "B": os.path.join(work, "b.yaml")}
open(configs["A"], "w").write(text)
# Each binary its own FFTW wisdom: the two may link different FFTW builds (scripts/build-fftw.sh),
# and one's wisdom names codelets the other lacks (its import then fails, and it plans again).
b_text = text.replace(os.path.join(work, "fftwf.wisdom"), os.path.join(work, "fftwf-b.wisdom"))
if a.new_threads is not None:
    b_text = re.sub(r"threads: \d+", f"threads: {a.new_threads}", b_text, count=1)
if a.new_output:
    # The vita49 output is one flow mapping: {kind: vita49, ...}; override or add the given keys.
    extra = dict(kv.split(":", 1) for kv in (x.strip() for x in a.new_output.split(",")))
    def patch(m):
        body = m.group(1)
        for k, v in extra.items():
            k, v = k.strip(), v.strip()
            body, n = re.subn(rf"\b{k}: [^,}}]+", f"{k}: {v}", body)
            if not n:
                body += f", {k}: {v}"
        return "{" + body + "}"
    patched = re.sub(r"\{(kind: vita49[^}]*)\}", patch, b_text)
    assert patched != b_text, "no vita49 output to change"
    b_text = patched
open(configs["B"], "w").write(b_text)
runs = {"A": a.old, "B": a.new}
for binary, label in ((a.old, "A"), (a.new, "B")):  # each plans its FFTs once, outside the timed runs
    subprocess.run([binary, "--config", configs[label], "--seconds", "0.5", "--log-interval", "0"], capture_output=True)
results = {"A": [], "B": []}
for _ in range(a.runs):
    for label, binary in runs.items():
        listen = None
        if a.listen:
            flags = a.listen_flags.split() + (a.new_listen_flags.split() if label == "B" else [])
            listen = subprocess.Popen([a.listen, "--data-port", str(data_port), "--event-port", "0", "--quiet"] + flags,
                                      stdout=subprocess.PIPE, text=True)
            time.sleep(0.3)
        err = subprocess.run([binary, "--config", configs[label], "--seconds", str(a.seconds), "--log-interval", "0"],
                             capture_output=True, text=True).stderr
        if listen:
            listen.send_signal(signal.SIGTERM)
            summary = listen.communicate(timeout=10)[0].splitlines()[0]
            if " 0 dropped by the kernel" not in summary or " 0 malformed" not in summary:
                print(f"{label}: the receiver lost data: {summary}")
        # Chunks out: those that reached the output (an unpaced source waits for the output, so
        # nothing is dropped; the output's pace is part of what is measured).
        chunks = int(re.search(r"chunks in \d+ out (\d+)", err).group(1))
        secs = float(re.search(r"stopped after ([0-9.]+) s", err).group(1))
        frames = chunks * int(re.search(r"chunk_frames: (\d+)", text).group(1))
        results[label].append(frames / secs / RATES[a.scenario])
for label, xs in results.items():
    what = runs[label] + (f" [{a.new_output}]" if label == "B" and a.new_output else "")
    what += f" [threads {a.new_threads}]" if label == "B" and a.new_threads is not None else ""
    what += f" [vigil-listen {a.new_listen_flags}]" if label == "B" and a.new_listen_flags and a.listen else ""
    print(f"{label} {what}: " + " ".join(f"{x:.2f}x" for x in xs))
