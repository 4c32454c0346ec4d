#!/usr/bin/env python3
"""band_rms on the GPU (its bands kept there) against the CPU stage (bench/results/LOG.md §10c): vigild
for 3 s per line on 51.2 kS/s int16 in 1024-frame chunks, a 255-tap 4-band fir_bank -> band_rms, in
three variants (only events sent: band_rms on the GPU; gpu_resident false; the bands sent over VITA 49),
at 64 and 256 channels, unpaced and at real time. Prints one line each from vigild's final status.
Usage: scripts/band_rms_probe.py BUILD_DIR [cuda|cpu] [once]   (once: 64 channels unpaced only)"""
import os, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_scenarios import final_status, free_port
if len(sys.argv) < 2:
    raise SystemExit(__doc__)
build = sys.argv[1]
backend = sys.argv[2] if len(sys.argv) > 2 else "cuda"
only_once = len(sys.argv) > 3
def run(name, channels, rate_factor, resident, send_bands, seconds=3):
    port, data_port = free_port(), free_port()
    outs = f'  - {{kind: events, destination: "127.0.0.1:{port}", status_interval_s: 1}}\n'
    if send_bands:
        outs += f'  - {{kind: vita49, stream: bands, jumbo: true, destination: "127.0.0.1:{data_port}"}}\n'
    cfg = f"""source: {{kind: synthetic, rate_hz: 51200, channels: {channels}, format: int16, chunk_frames: 1024, seed: 3, rate_factor: {rate_factor}, loop_s: 0.5,
  signals: [{{sines: [{{freq_hz: 80, amplitude: 0.02}}, {{freq_hz: 3000, amplitude: 0.005}}], noise_rms: 0.001}}]}}
pipeline: {{backend: {backend}, memory: copy, gpu_resident: {str(resident).lower()}}}
stages:
  - name: bands
    kind: fir_bank
    input: input
    taps: 255
    bands:
      - {{name: b0, type: lowpass, cutoff_hz: 500}}
      - {{name: b1, type: bandpass, low_hz: 500, high_hz: 2000}}
      - {{name: b2, type: bandpass, low_hz: 2000, high_hz: 5000}}
      - {{name: b3, type: bandpass, low_hz: 5000, high_hz: 10000}}
  - {{name: alarm, kind: band_rms, input: bands, window_s: 0.1, threshold: 0.01}}
outputs:
{outs}"""
    work = tempfile.mkdtemp(prefix="rms-")
    config = os.path.join(work, "c.yaml")
    open(config, "w").write(cfg)
    out = os.path.join(work, "listen.jsonl")
    listen = subprocess.Popen([os.path.join(build, "apps/vigil-listen"), "--event-port", str(port), "--data-port", str(data_port), "--json"],
                              stdout=open(out, "w"), stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    rc = subprocess.call([os.path.join(build, "apps/vigild"), "--config", config, "--seconds", str(seconds), "--log-interval", "0"],
                         stderr=open(os.path.join(work, "vigild.log"), "w"))
    time.sleep(0.5)
    listen.send_signal(signal.SIGTERM)
    listen.wait(timeout=10)
    final, _ = final_status(out)
    if final is None:
        print(name, "no final status", rc, open(os.path.join(work, "vigild.log")).read()[-2000:]); return
    st = final["stages"]
    def s(n):
        x = st[n]; g = f" gpu {x['gpu_us']['p50']}" if "gpu_us" in x else ""
        return f"{n} {x['time_us']['p50']}/{x['time_us']['p99']}{g} ({x.get('backend','cpu')}, dev_in {x.get('device_input_chunks','-')})"
    rate = final["frames_in"] * channels / max(final["uptime_s"], 1e-9)
    print(f"{name}: {channels} ch x{rate_factor} | M samples/s {rate/1e6:.1f} misses {final['deadline_misses']} dropped {final['dropped_frames']} "
          f"| chunk p50/p99 {final['processing_us']['p50']}/{final['processing_us']['p99']} | lat p50/p99 {final['latency_us']['p50']}/{final['latency_us']['p99']} | {s('bands')} | {s('alarm')}", flush=True)
for ch in ((64,) if only_once else (64, 256)):
    for rf in ((0,) if only_once else (0, 1)):
        for rep in range(1):
            run("gpu band_rms, bands kept on the GPU", ch, rf, True, False)
            run("cpu band_rms, gpu_resident false   ", ch, rf, False, False)
            run("cpu band_rms, bands sent (rule)    ", ch, rf, True, True)
