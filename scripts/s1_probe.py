#!/usr/bin/env python3
"""One scenario load point with each stage's time (S1 unless --scenario says s2 or s3): its config from
bench/scenarios/ with the channels, rate factor (0: unpaced), pool threads and memory given, vigild
for --seconds with vigil-listen receiving its events and data.
Prints one line from vigild's final status: input samples/s, deadline misses, dropped frames,
latency p50/p99 (us), the pipeline's time per chunk p50/p99 (us: conversion, stages, hand-over) and each
stage's time per chunk p50/p99 (us), with its GPU time p50 (CUDA events) and backend.
Usage: scripts/s1_probe.py --build build-gpu --channels 16 --rate-factor 1 [--threads 8] [--memory auto] [--resident] [--pool-chunks 32]
       scripts/s1_probe.py --scenario s2 --build build-gpu --channels 64 --rate-factor 1 [--busy-poll]
       scripts/s1_probe.py --build build-gpu --channels 512 --resident --gpus '[0, 0]'"""
import argparse, os, re, signal, subprocess, tempfile, time

from bench_scenarios import FILES, final_status, free_port

p = argparse.ArgumentParser()
p.add_argument("--scenario", default="s1", choices=sorted(FILES))
p.add_argument("--build", default="build")
p.add_argument("--channels", type=int, default=16)
p.add_argument("--rate-factor", type=float, default=1)
p.add_argument("--threads", type=int, default=None, help="pipeline.threads (default: 8 for S1, else the config default: one per core less one)")
p.add_argument("--memory", default=None, choices=["auto", "copy", "mapped"], help="pipeline.memory (default: the config's, else auto)")
p.add_argument("--busy-poll", action="store_true", help="pipeline.busy_poll true")
p.add_argument("--listen-busy-poll", action="store_true", help="vigil-listen --busy-poll (it never sleeps, so vigild's sends never wake it)")
p.add_argument("--listen-gro", action="store_true", help="vigil-listen --gro (each of vigild's GSO sends delivered as one receive)")
p.add_argument("--send-threads", type=int, default=1, help="pipeline.send_threads")
p.add_argument("--backend", default="cuda")
p.add_argument("--seconds", type=float, default=4)
p.add_argument("--pool-chunks", type=int, default=32, help="pipeline.pool_chunks (the pool is limited to 1 GiB: 8 for 384-512 channels)")
p.add_argument("--resident", action="store_true", help="S1: pipeline.gpu_resident true (AE hits on the GPU, chunk kept there); without it false")
p.add_argument("--framing", choices=["none", "vrl"], help="the data output's framing (default: the config's)")
p.add_argument("--event-framing", choices=["none", "lines"], help="the events output's framing (default: the config's)")
p.add_argument("--upload-in-parts", choices=["true", "false"], help="pipeline.upload_in_parts (default: the service's, true)")
p.add_argument("--copy-threads", type=int, help="source.copy_threads (default: the source's, half the cores, 2 to 8)")
p.add_argument("--cuda-graphs", choices=["all", "fir_bank", "off"], help="pipeline.cuda_graphs (default: the service's)")
p.add_argument("--gpus", help="pipeline.gpus, e.g. '[0, 0]' (the split stages' channels over these devices; default: none)")
p.add_argument("--gpu-keep-warm", choices=["auto", "true", "false"], help="pipeline.gpu_keep_warm (default: the service's, auto)")
a = p.parse_args()
if a.threads is None:
    a.threads = 8 if a.scenario == "s1" else 0


here = os.path.dirname(os.path.abspath(__file__))
text = open(os.path.join(here, "..", "bench", "scenarios", FILES[a.scenario])).read()
port, data_port = free_port(), free_port()
for k, v in {"CHANNELS": a.channels, "RATE_FACTOR": a.rate_factor, "BACKEND": a.backend, "THREADS": a.threads,
             "BUSY_POLL": str(a.busy_poll).lower(), "SEND_THREADS": a.send_threads, "EVENT_PORT": port, "DATA_PORT": data_port, "WISDOM": "off"}.items():
    text = text.replace(f"@{k}@", str(v))
# The pipeline line's keys: each given one replaces the config's value or is added to it.
line = re.search(r"^pipeline: \{(.*)\}$", text, re.M)
keys = dict(kv.split(": ", 1) for kv in re.split(r",\s*", line.group(1)))
keys["threads"] = str(a.threads)
keys["busy_poll"] = str(a.busy_poll).lower()
keys["send_threads"] = str(a.send_threads)
if a.memory or "memory" not in keys:
    keys["memory"] = a.memory or "auto"
if a.upload_in_parts:
    keys["upload_in_parts"] = a.upload_in_parts
if a.cuda_graphs:
    keys["cuda_graphs"] = a.cuda_graphs
if a.gpu_keep_warm:
    keys["gpu_keep_warm"] = a.gpu_keep_warm
if a.gpus:
    keys["gpus"] = a.gpus
if a.scenario == "s1":
    keys["gpu_resident"] = str(a.resident).lower()
    keys["pool_chunks"] = str(a.pool_chunks)
text = text[:line.start()] + "pipeline: {" + ", ".join(f"{k}: {v}" for k, v in keys.items()) + "}" + text[line.end():]
if a.copy_threads is not None:
    text = re.sub(r"(\n  loop_s: [^\n]*)", rf"\g<1>\n  copy_threads: {a.copy_threads}", text, count=1)
if a.framing:
    text = re.sub(r"(kind: vita49.*)framing: \w+", rf"\g<1>framing: {a.framing}", text)
if a.event_framing:
    if re.search(r"kind: events.*framing: \w+", text):
        text = re.sub(r"(kind: events.*)framing: \w+", rf"\g<1>framing: {a.event_framing}", text)
    elif a.event_framing == "lines":  # the config leaves it at its default (none): lines in jumbo datagrams
        text = re.sub(r"(kind: events.*)\}", rf"\g<1>, framing: {a.event_framing}, jumbo: true}}", text)
work = tempfile.mkdtemp(prefix="s1-probe-")
config = os.path.join(work, a.scenario + ".yaml")
open(config, "w").write(text)
out = os.path.join(work, "listen.jsonl")
listen = subprocess.Popen([os.path.join(a.build, "apps/vigil-listen"), "--event-port", str(port), "--data-port",
                           str(data_port), "--json"] + (["--busy-poll"] if a.listen_busy_poll else [])
                          + (["--gro"] if a.listen_gro else []),
                          stdout=open(out, "w"), stderr=subprocess.DEVNULL)
time.sleep(0.3)
rc = subprocess.call([os.path.join(a.build, "apps/vigild"), "--config", config, "--seconds", str(a.seconds),
                      "--log-interval", "0"], stderr=open(os.path.join(work, "vigild.log"), "w"))
# vigil-listen may still be working through a backlog (S1 at hundreds of channels sends ~100 000
# events a second): give it up to 10 s to reach the final status before stopping it.
for _ in range(100):
    time.sleep(0.1)
    with open(out, "rb") as f:
        f.seek(max(0, os.path.getsize(out) - 65536))
        if b'"final":true' in f.read():
            break
listen.send_signal(signal.SIGTERM)
listen.wait(timeout=10)
final, _ = final_status(out)
if final is None:
    print(f"{a.channels} {a.rate_factor} rc={rc}: no final status; log in {work}:")
    print("".join(open(os.path.join(work, "vigild.log")).readlines()[-8:]))
    raise SystemExit(1)
rate = (final.get("frames_out_per_s") or final["frames_out"] / max(final["uptime_s"], 1e-9)) * a.channels
def stage_text(name, s):
    gpu = f" gpu {s['gpu_us']['p50']}" if "gpu_us" in s else ""
    if "upload_wait_us" in s:
        gpu += f" upload wait {s['upload_wait_us']['p50']}/{s['upload_wait_us']['p99']}"
    if "enqueue_us" in s:
        gpu += f" enq {s['enqueue_us']['p50']} wait {s['wait_us']['p50']}"
        if s.get("start_lag_us", {}).get("max"):
            gpu += f" start lag {s['start_lag_us']['p50']}/{s['start_lag_us']['p99']}"
    if s.get("graph_chunks"):
        gpu += f" graphs {s['graph_chunks']}"
    if "emit_us" in s:
        gpu += f" emit {s['emit_us']['p50']}/{s['emit_us']['p99']}"
    return f"{name} {s['time_us']['p50']}/{s['time_us']['p99']}{gpu} ({s.get('backend', 'cpu')})"
stages = " ".join(stage_text(name, s) for name, s in final.get("stages", {}).items() if "time_us" in s)
# Where the misses were blamed: the capture queue, the output, or a stage (PROTOCOL: deadline_misses_by).
blame = {k: v for k, v in final.get("deadline_misses_by", {}).items() if v}
blame.update({name: s["deadline_misses"] for name, s in final.get("stages", {}).items() if s.get("deadline_misses")})
proc = final.get("processing_us", {})
parts = final.get("latency_parts_us", {})
parts_text = " ".join(f"{k} {v['p50']}/{v['p99']}" for k, v in parts.items())
# The time the output thread spent on each pass over the queued events, and events a chunk.
passes = final.get("event_passes_us", {})
events = sum(final.get("events_by_type", {}).values())
sends = final.get("event_sends_us", {})
parts_text += f" events {events / max(final.get('chunks_processed', 1), 1):.0f}/chunk in passes {passes.get('p50')}/{passes.get('p99')} (sends {sends.get('p50')}/{sends.get('p99')})"
work_us = final.get("look_ahead_work_us", {})
parts_text += f" | look-ahead work {work_us.get('p50')}/{work_us.get('p99')}"
print(f"{a.scenario} {a.channels} ch x{a.rate_factor} threads={a.threads} mem={keys['memory']} busy_poll={a.busy_poll} send={a.send_threads} resident={a.resident} graphs={a.cuda_graphs or 'default'} warm={final.get('gpu_keep_warm', {}).get('rounds', 'off')}{' gpus=' + a.gpus if a.gpus else ''} | Msamples/s {rate / 1e6:.1f} "
      f"misses {final['deadline_misses']} {blame or ''} dropped {final['dropped_frames']} source late {final.get('source', {}).get('late_chunks', 0)} | lat p50/p99 "
      f"{final['latency_us']['p50']} {final['latency_us']['p99']} | chunk p50/p99 {proc.get('p50')} {proc.get('p99')} ahead {final.get('look_ahead_chunks', 0)}/{final.get('chunks_processed', 0)} in parts {final.get('chunks_uploaded_in_parts', 0)} ({100 * final.get('frames_uploaded_in_parts', 0) / max(final.get('frames_out', 1) , 1):.0f} % of frames) | {parts_text} | stage p50/p99 us: {stages}", flush=True)
