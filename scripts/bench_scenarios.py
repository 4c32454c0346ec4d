#!/usr/bin/env python3
"""End-to-end scenario benchmarks (issues 9, 51): the real vigild on each config of bench/scenarios/
at increasing load, vigil-listen receiving on loopback. For every load step: input samples/s
sustained, per-chunk end-to-end latency (capture of the chunk's last frame -> its last datagram
sent: vigild's own histogram) p50/p99/p99.9/max, deadline misses, frames dropped in vigild, data
lost on the way to the receiver; then the highest load with zero misses and zero drops.
Run through scripts/bench-scenarios.sh (its --help lists the options)."""
import argparse, contextlib, json, os, re, signal, socket, statistics, subprocess, sys, tempfile, time

import bench_peers
from host_load import HostLoad

# A cross build's tests run the target's programs under an emulator (tests set VIGIL_EMULATOR,
# e.g. qemu-aarch64): every program the runner starts goes through it.
EMULATOR = os.environ.get("VIGIL_EMULATOR", "").split()


def program(args, name):
    """The command that runs the build's program `name` (apps/vigild, bench/host_jitter, ...)."""
    return EMULATOR + [os.path.join(args.build, name)]


RATES = {"s1": 10_000_000, "s2": 51_200, "s3": 48_000}
NOMINAL_CHANNELS = {"s1": 16, "s2": 64, "s3": 2}
FILES = {"s1": "s1-ae.yaml", "s2": "s2-vibration.yaml", "s3": "s3-crossover.yaml"}
TITLES = {"s1": "S1 AE rig: 10 MS/s int16 per channel, 65536-frame chunks, FIR 255 -> db8 denoise -> AE hits",
          "s2": "S2 vibration: 51.2 kS/s per channel, 1024-frame chunks, 4 bands x 8191 taps -> vibration, bands out",
          "s3": "S3 crossover: 2 channels x 48 kHz float, 256-frame chunks, 4 x 8191-tap crossover, bands out"}
# Load steps (channels, rate_factor): the CPU ones climb to the goals of issue 9 on a 2-core
# machine, the GPU ones past issue 51's 13 G samples/s for S1 (1300 channels).
LOADS = {
    "cpu": {"s1": [(1, 1), (2, 1), (4, 1), (8, 1), (16, 1)],
            "s2": [(64, 1), (64, 5), (64, 10), (64, 20), (64, 35), (64, 50)],
            "s3": [(2, 1), (2, 10), (2, 50), (2, 100), (2, 200), (2, 500), (2, 1000)]},
    "cuda": {"s1": [(16, 1), (32, 1), (64, 1), (128, 1), (256, 1), (512, 1), (800, 1), (1024, 1), (1300, 1),
                    (1600, 1)],
             "s2": [(64, 1), (256, 1), (512, 1), (1024, 1), (1024, 2), (1024, 4)],
             "s3": [(2, 1), (2, 10), (2, 100), (2, 500), (2, 1000), (2, 2000)]},
}


# pipeline.threads per backend and scenario (0: one per core less one). S1 on the H100 host (16 vCPUs, 2026-11-22):
# with 16 threads the AE stage's 16 lanes took 2.4 ms a chunk (p50) and 16 channels missed 2-20
# deadlines in 3-5 s; with 8, 1.2 ms and none (the capture, output and receiving threads need cores too).
# S3 on the CPU: its 2 channels split over 2 threads at most; on a 16-core host the default (one per
# core) would keep 14 idle helpers spinning under --busy-poll.
# S2 on the GPU: 4 (its FIR and vibration stages run on the GPU; the pool converts and copies), so
# that with --busy-poll its spinning helpers, eight spinning senders, the pipeline and output threads
# and vigil-listen fit the 16 cores (probes, 2026-11-23: p50 479-495 us at 64 channels this way).
# S3 on the GPU: 2 as well (its crossover runs on the GPU; the default kept 16 helpers spinning, which
# vigild warns about; probes, second session of 2026-11-25: p99 83-135 us with 1, 2 or 16 alike).
# The 2-core machine: the default (one per core less one: no helper); S3 had 2 (2026-11-22), which on
# the machine of 2026-11-26 ran 142-223x real time unpaced against 353-358x without a helper. S1 has
# 2: its 6.5 ms chunks are long enough for the split to pay (scripts/s1_probe.py --backend cpu
# --channels 4 --rate-factor 1, 2026-11-27: 1 and 3 misses in ~765 chunks, latency p50 3.3 ms, with
# 2 threads; 12 and 34 misses, p50 4.4 ms, with 1). S2 has 2 (fifth session of 2026-11-27, a 2-vCPU
# Xeon guest: unpaced 11.5-12.6x real time against 8.3-9.7x with 1, and 1 miss at 5x against 5; GNU
# Radio, which it is compared with, runs on both cores); on the EPYC guest of 2026-11-25 one thread had
# been faster (--threads s2:0 measures that). S3 has 2: its bank then runs the 1024-frame partitions
# deferred on a thread of their own (seventh session of 2026-11-27, the same Xeon guest: unpaced
# 269-367x real time with 1 thread, mean 328; 292-414x, mean 363, with 2, in 8 alternating runs).
THREADS = {"cpu": {"s1": 2, "s2": 2, "s3": 2}, "cuda": {"s1": 8, "s2": 4, "s3": 2}, "auto": {}}
# pipeline.send_threads per backend and scenario: S2 sends 256 lanes a chunk at 64 channels (4096 at
# 1024); on the H100 host four senders took one chunk of 256 datagrams from 376 to 144 us, and in
# vigild eight took 64 channels from 767 to 215 us a chunk (p50) and 1024 from 13.3 to 2.4 ms
# (bench/udp_send_bench, scripts/s1_probe.py). S1 at 800 channels queues ~750 AE hits a chunk at
# once; four threads format them (bench/event_output_bench on the H100 host: 2.1 ms for 1000 hits
# from one thread, 0.97 ms from four; in vigild the hand-over went from 1.7-2.7 ms to 0.7 ms, p50).
# The 2-core machine has no core to spare for them.
SEND_THREADS = {"cpu": {}, "cuda": {"s1": 4, "s2": 8}, "auto": {}}
# How long past a step's --seconds vigild may take to start (FFT planning, S1's pool) and to exit
# before the step is reported as hung and vigild killed.
GRACE_S = 120


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def final_status(listen_out):
    """vigild's final status event and vigil-listen's summary from vigil-listen's --json output
    (None where missing)."""
    final, summary = None, None
    for line in open(listen_out):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("kind") == "event" and j["event"].get("type") == "status" and j["event"].get("final"):
            final = j["event"]
        if j.get("kind") == "summary":
            summary = j
    return final, summary


def scenario_config(args, scen, channels, rate_factor, busy_poll, data_port, event_port, workdir, s3_block=0):
    """The scenario's config text with the runner's values filled in (bench/scenarios/*.yaml);
    s3_block: S3's chunk and filter delay in frames (0: its own, a 256-frame chunk and no more delay)."""
    text = open(os.path.join(args.scenarios, FILES[scen])).read()
    for k, v in {"CHANNELS": channels, "RATE_FACTOR": rate_factor, "BACKEND": args.backend,
                 "CHUNK_FRAMES": s3_block or 256, "MAX_LATENCY": s3_block,
                 "BUSY_POLL": "true" if busy_poll and scen in ("s2", "s3") else "false",
                 "THREADS": args.threads.get(scen, THREADS[args.backend].get(scen, 0)),
                 "SEND_THREADS": SEND_THREADS[args.backend].get(scen, 1),
                 "DATA_PORT": data_port, "EVENT_PORT": event_port,
                 "WISDOM": os.path.join(workdir, "fftwf.wisdom")}.items():
        text = text.replace(f"@{k}@", str(v))
    if scen == "s1":  # the chunk pool may take at most 1 GiB: 32 chunks of S1 up to 256 channels, 10 at 800
        chunk_bytes = channels * 65536 * 2
        text = text.replace("pool_chunks: 32", f"pool_chunks: {max(2, min(32, (1 << 30) // chunk_bytes))}")
    return text


@contextlib.contextmanager
def listening(args, listen_out, data_port, event_port, flags=()):
    """vigil-listen receiving on the ports (data port 0: events only), its --json lines into
    listen_out, for the length of the with block; it gets half a second after the block for the
    last datagrams (vigild's final status) before it is stopped."""
    # 256 MiB a socket: the receiver shares the host with vigild, and S1 at 800 channels sends it
    # ~115 000 event lines a second; with vigil-listen's default 16 MiB one run in five lost 4 239
    # events to a stall of the receiver (H200 host, 2026-11-27), which a rig's receiver on its own
    # machine would not see. Granted as root (SO_RCVBUFFORCE), else up to net.core.rmem_max.
    listen = subprocess.Popen(program(args, "apps/vigil-listen") + ["--data-port", str(data_port),
                               "--event-port", str(event_port), "--json", "--buffer-kib", str(256 * 1024)]
                              + list(flags), stdout=open(listen_out, "w"), stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        yield
    finally:
        time.sleep(0.5)
        listen.send_signal(signal.SIGTERM)
        try:
            listen.wait(timeout=10)
        except subprocess.TimeoutExpired:  # its summary is then missing: the step shows no receiver counts
            print("(vigil-listen did not stop within 10 s of SIGTERM: killed)", file=sys.stderr, flush=True)
            listen.kill()
            listen.wait()


def why_failed(args, log, config, rc):
    """A vigild run that gave no final status, in a line: hung (rc None, killed), or its exit
    status and the first of its config errors (FILE:LINE:COLUMN: message), else its log's last line."""
    if rc is None:
        return f"vigild hung: still running {args.seconds + GRACE_S:g} s after its start (killed)"
    lines = [l.strip() for l in open(log, errors="replace").read().splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith(config + ":")]
    if errors:
        text = errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    else:
        text = lines[-1] if lines else ""
    return f"no final status (vigild exit {rc}" + (": " + text[:300] if text else "") + ")"


def run_vigild(args, config, log):
    """vigild on the config for --seconds, its stderr into log: its exit status, or None when it
    was still running GRACE_S after its run should have ended (then it is killed, so that one hung
    step cannot hold up the rest)."""
    with open(log, "w") as err:
        try:
            return subprocess.run(program(args, "apps/vigild") + ["--config", config, "--seconds",
                                   str(args.seconds), "--log-interval", "0"], stderr=err,
                                  timeout=args.seconds + GRACE_S).returncode
        except subprocess.TimeoutExpired:
            return None


def run_step(args, scen, channels, rate_factor, workdir, s3_block=0):
    """One step: vigild on the scenario, vigil-listen receiving its data and events."""
    data_port, event_port = free_port(), free_port()
    text = scenario_config(args, scen, channels, rate_factor, args.busy_poll, data_port, event_port, workdir,
                           s3_block)
    config = os.path.join(workdir, f"{scen}-{channels}-{rate_factor}-{s3_block}.yaml")
    open(config, "w").write(text)
    listen_out = config + ".listen.jsonl"
    # With --busy-poll vigil-listen spins too (S2, S3): on loopback a datagram is delivered inside
    # vigild's send call, and waking a sleeping receiver is part of that call, which a receiver on
    # another machine (a rig's) never costs the sender. Measured on an H200 host, S2 at 64
    # channels: latency p99 447, 367 us with vigil-listen sleeping, 351, 303 us with it spinning.
    listen_poll = ["--busy-poll"] if args.busy_poll and scen in ("s2", "s3") else []
    # With --gro each of vigild's GSO sends (a run of equal datagrams) reaches vigil-listen as one
    # receive: on loopback the sender then delivers it whole instead of datagram by datagram.
    listen_poll += ["--gro"] if args.gro else []
    log = config + ".vigild.log"
    host = HostLoad().start()
    with listening(args, listen_out, data_port, event_port, listen_poll):
        t0 = time.monotonic()
        rc = run_vigild(args, config, log)
        wall = time.monotonic() - t0
    # Over the whole run (vigil-listen's start to its end): what the host's other processes and
    # its hypervisor took meanwhile.
    load = host.stop()
    final, summary = final_status(listen_out)
    row = {"scenario": scen, "channels": channels, "rate_factor": rate_factor, "rc": rc, "wall_s": wall,
           "host": load}
    if rc is None or final is None:
        row["error"] = why_failed(args, log, config, rc)
        return row
    # Frames out: those that reached the output thread (the same as in for a clean paced step; an
    # unpaced source waits for the output, so unpaced steps measure the whole service, sending included).
    frames, up = final["frames_out"], max(final["uptime_s"], 1e-9)
    # Sustained: vigild's own rate from its first chunk out to its last (the start left out);
    # frames over the uptime where a build before it has no such key.
    frames_per_s = final.get("frames_out_per_s") or frames / up
    if summary is None:  # what arrived is unknown: never reported as nothing lost
        row["error"] = "vigil-listen gave no summary of what it received"
        return row
    lost_rx = sum(summary["kernel_drops"].values()) + sum(s["gaps"] for s in summary["streams"]) + summary["event_gaps"]
    row.update({
        "samples_per_s": frames_per_s * channels,
        "nominal_per_s": RATES[scen] * channels * rate_factor,
        "latency_us": final["latency_us"],
        # Where the latency went (queued for the pipeline, handed over, sending) and each stage's time:
        # in the --json rows, for comparing two builds' tails.
        "latency_parts_us": final.get("latency_parts_us", {}),
        "stage_time_us": {name: st.get("time_us", {}) for name, st in final.get("stages", {}).items()},
        "deadline_misses": final["deadline_misses"],
        "dropped_frames": final["dropped_frames"] + final.get("output_dropped_frames", 0),
        "send_errors": final.get("send_errors", 0),
        "lost_at_receiver": lost_rx,
        # Chunks the paced source itself delivered more than a period late (it could not keep the
        # rate: a device would have overrun); none of the counts above shows them.
        "source_late_chunks": final.get("source", {}).get("late_chunks", 0),
        "backend": final.get("backend", "?"),
        # The FIR stages' form and delay: their bands lag the input by delay_frames beyond the latency.
        "fir_stages": {name: {"form": st.get("form", "?"), "delay_frames": st["delay_frames"]}
                       for name, st in final.get("stages", {}).items() if "delay_frames" in st},
    })
    row["ok"] = rc == 0 and row["deadline_misses"] == 0 and row["dropped_frames"] == 0 and row["send_errors"] == 0 \
        and lost_rx == 0 and row["source_late_chunks"] == 0
    return row


def probe_host(args):
    """Before the runs: how dependably this host runs a thread (bench/host_jitter: gaps in
    spinning threads, late wake-ups of sleeping ones). On 28 Nov a 100 us sleep woke late by p99
    14-22 us on an H200 host and 53-76 us on an H100 host, whose scenario tails were 3-4 times
    longer with the same build."""
    probe = os.path.join(args.build, "bench/host_jitter")
    if not os.path.exists(probe):
        print(f"\n(No host probe: {probe} is not built.)", flush=True)
        return
    text = subprocess.run(EMULATOR + [probe, "--seconds", f"{args.host_probe_s:g}"], capture_output=True, text=True,
                          timeout=args.host_probe_s + 60).stdout.strip()
    print("\n### The host, before the runs\n\n```\n" + text + "\n```", flush=True)


def print_host_load(hosts, repeat):
    """Below a scenario's table: what else the host did during each step (scripts/host_load.py),
    so that a tail that came with steal or other load is seen to be the host's."""
    worst = " (steal and other processes: the most of its runs; vigild and vigil-listen: the median)" \
        if repeat > 1 else ""
    steps = "; ".join(f"{ch} ch x{rf}: steal {h['steal_pct']:g} %, other processes {h['other_cores']:g} cores, "
                      f"vigild and vigil-listen {h['own_cores']:g}" for ch, rf, h in hosts)
    print(f"\nThe host meanwhile, per step{worst}: {steps}.", flush=True)


def print_fir_delays(scen, row):
    """Below a scenario's table: each FIR stage's form and the delay its bands carry beyond the
    latency in the table (the latency runs from a chunk's capture to its last datagram; a block of
    filter delay comes on top for the signal in it)."""
    for name, st in sorted((row or {}).get("fir_stages", {}).items()):
        ms = st["delay_frames"] / RATES[scen] * 1e3
        print(f"\nStage '{name}' runs in form '{st['form']}': its bands lag their input by {st['delay_frames']} "
              f"frames ({ms:.2f} ms at {RATES[scen]:,} samples/s) beyond the latency above.", flush=True)


def combine_runs(rows):
    """One table row from the repeated runs of a step (--repeat): the lowest sustained rate, the
    median p50, the worst p99, p99.9 and max (and each run's p99), the counts summed, and how many
    runs were clean; the step is clean only if every run was."""
    errors = [r for r in rows if "error" in r]
    if errors:
        return dict(errors[0], error=f"{len(errors)} of {len(rows)} runs: {errors[0]['error']}", runs=len(rows))
    lat = [r["latency_us"] for r in rows]
    row = dict(rows[0])
    row.update({
        "samples_per_s": min(r["samples_per_s"] for r in rows),
        "latency_us": {"p50": statistics.median(l["p50"] for l in lat), "p99": max(l["p99"] for l in lat),
                       "p999": max(l["p999"] for l in lat), "max": max(l["max"] for l in lat)},
        "p99_each_us": [l["p99"] for l in lat],
        "clean_runs": sum(1 for r in rows if r["ok"]),
        "runs": len(rows),
        "ok": all(r["ok"] for r in rows),
        "host": {"steal_pct": max(r["host"]["steal_pct"] for r in rows),
                 "other_cores": max(r["host"]["other_cores"] for r in rows),
                 "own_cores": statistics.median(r["host"]["own_cores"] for r in rows)},
    })
    for k in ("deadline_misses", "dropped_frames", "send_errors", "lost_at_receiver", "source_late_chunks"):
        row[k] = sum(r[k] for r in rows)
    return row


def run_unreceived(args, scen, channels, workdir, s3_block=0):
    """vigild unpaced with its band data sent to a socket that never reads it (the kernel drops it
    once its buffer is full), as a null sink takes it; its events go to vigil-listen (events only,
    a few a second) for the final status: the sustained rate (frames_out_per_s, the start left out)."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sink.bind(("127.0.0.1", 0))
    port, event_port = sink.getsockname()[1], free_port()
    text = scenario_config(args, scen, channels, 0, False, port, event_port, workdir, s3_block)
    config = os.path.join(workdir, f"{scen}-{channels}-{s3_block}-unreceived.yaml")
    open(config, "w").write(text)
    listen_out = config + ".listen.jsonl"
    log = config + ".vigild.log"
    with listening(args, listen_out, 0, event_port):
        rc = run_vigild(args, config, log)
    sink.close()
    final, _ = final_status(listen_out)
    if rc is None or final is None or not final.get("frames_out_per_s"):
        return {"error": why_failed(args, log, config, rc)}
    return {"samples_per_s": final["frames_out_per_s"] * channels}


# The comparison's FIR banks for GNU Radio: vigil-dsp firdesign (type, cutoffs) per band, 8191 taps
# each. S2: the S2 config's own bands. S3: the crossover's edges as a lowpass, two band-passes and a
# highpass (fft_filter_fff's cost depends on the tap count alone; Vigil's crossover filters three
# bands and takes the fourth as the delayed input minus the others, GNU Radio gets all four).
GNURADIO_BANDS = {
    "s2": [("lowpass", "500"), ("bandpass", "500,2000"), ("bandpass", "2000,5000"), ("bandpass", "5000,10000")],
    "s3": [("lowpass", "250"), ("bandpass", "250,2000"), ("bandpass", "2000,8000"), ("highpass", "8000")],
}
# GNU Radio runs S3 ~50 times faster than S2 in real-time terms: as much wall time for each.
GNURADIO_SIGNAL_SCALE = {"s2": 1, "s3": 50}
# GNU Radio's fft_filter_fff with 8191 taps runs 16384-point FFTs: blocks of 8194 frames, so a sample
# waits up to 8194 frames for its output. Vigil at that delay: S3 in 4096-frame chunks with a filter
# delay of 4096 (max_latency_frames), 8192 frames in all; S3's own is a 256-frame chunk and no added
# delay. S2's config has a filter delay of 8192 already (vibration tolerates it) in 1024-frame chunks.
GNURADIO_S3_BLOCK = 4096


def design_taps(args, work, scen):
    """The peers' filters for the scenario (GNURADIO_BANDS) as float64 files: their paths."""
    dsp = os.path.join(args.build, "apps/vigil-dsp")
    taps = []
    for i, (kind, cut) in enumerate(GNURADIO_BANDS[scen]):
        taps.append(os.path.join(work, f"{scen}-taps{i}.f64"))
        subprocess.check_call(EMULATOR + [dsp, "firdesign", "--type", kind, "--taps", "8191", "--cutoff", cut,
                                          "--rate", str(RATES[scen]), "--out", taps[-1]])
    return taps


def compare_peers(args, work, best):
    """S3 at its own 256-frame latency against zita-convolver and BruteFIR (scripts/bench_peers.py),
    rounds of the four one after the other (the machine's drift hits all alike): each engine's rate
    in real-time multiples and the CPU cores it kept busy, Vigil's whole S3 unpaced (with vigil-listen
    receiving, and with its band data to a socket nobody reads); the ratios of each round and the
    medians."""
    scen, channels, rate = "s3", NOMINAL_CHANNELS["s3"], RATES["s3"]
    zita = os.path.join(args.build, "bench/zita_bank")
    if not os.access(zita, os.X_OK):
        print(f"\n(No zita-convolver comparison: {zita} is not built; apt-get install libzita-convolver-dev, "
              "then build.)", flush=True)
        return None
    if subprocess.call(["sh", "-c", "command -v brutefir"], stdout=subprocess.DEVNULL) != 0:
        print("\n(No BruteFIR comparison: apt-get install brutefir.)", flush=True)
        return None
    peers = bench_peers.Peers(args.build, work, rate, channels, design_taps(args, work, scen), args.peers_signal_s)
    rounds = []
    for _ in range(args.peers_rounds):
        z, b = peers.run_zita(), peers.run_brutefir()
        bank = bench_peers.run_bank(args.build)
        vigil = run_step(args, scen, channels, 0, work)
        alone = run_unreceived(args, scen, channels, work)
        rounds.append({"z": z, "b": b, "k_x": bank.get("x_realtime"), "k_err": bank.get("error"),
                       "v_x": vigil["samples_per_s"] / (channels * rate) if "error" not in vigil else None,
                       "v_cores": vigil["host"]["own_cores"] if "error" not in vigil else None,
                       "a_x": alone["samples_per_s"] / (channels * rate) if "error" not in alone else None,
                       "v_err": vigil.get("error"), "a_err": alone.get("error")})
    zm, zv = peers.zita_options
    trials = ", ".join(f"{m}{' vector' if v else ''} {x:.0f}x" for x, m, v in sorted(peers.zita_trials, reverse=True))
    if peers.zita_failed:
        trials += " (failed: " + "; ".join(f"{m}{' vector' if v else ''}: {e}" for m, v, e in peers.zita_failed) + ")"
    print(f"\n### S3 against zita-convolver and BruteFIR at 256-frame latency ({len(rounds)} rounds)\n")
    print(f"Each engine: 2 channels x 4 bands x 8191 taps at 48 kHz, periods of 256 frames. zita-convolver "
          f"{rounds[0]['z'].get('version', '?')} (bench/zita_bank: non-uniform partitions from 256 to {zm}"
          f"{', vector mode' if zv else ''}, its levels on threads of their own; chosen as the fastest of: {trials}; "
          f"{args.peers_signal_s:g} s of signal; output checked against direct convolution, relative RMS error "
          f"{rounds[0]['z'].get('check_rel_rms_error', float('nan')):.1e}). BruteFIR {peers.brutefir_version} "
          f"(filter_length 256,32; one filter process per channel; a raw float file of {args.peers_signal_s:g} s "
          f"read as fast as it goes, output to /dev/null; checked on a short run: relative RMS error "
          f"{peers.brutefir_check if peers.brutefir_check is not None else float('nan'):.1e}). Vigil: the whole S3 "
          f"unpaced for {args.seconds:g} s, with vigil-listen receiving on the same cores, then with no receiver; "
          f"and its bank alone (bench/fir_bank_scenarios_bench {bench_peers.BANK_BENCH}: the crossover as the "
          "pipeline runs it, 2 threads, no source and no sending), the engine beside the engines. "
          "Cores: CPU time over wall time (zita: its process; BruteFIR: the whole machine while it filtered, as its "
          "filter processes are not its children; Vigil: vigild and vigil-listen).\n")
    print("| round | zita-convolver x real time (cores) | BruteFIR x real time (cores) | Vigil, receiving (cores) "
          "| ÷ zita | ÷ BruteFIR | Vigil, no receiver | ÷ zita | ÷ BruteFIR | Vigil's bank alone | ÷ zita | ÷ BruteFIR |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def peer(r):
        return f"failed: {r['error'][:80]}" if "error" in r else f"{r['x_realtime']:.1f}x ({r['cpu_cores']:.2f})"

    def ratio(v, r):
        return "" if v is None or "error" in r else f"{v / r['x_realtime']:.2f}x"

    for i, r in enumerate(rounds, 1):
        v = f"failed: {r['v_err'][:80]}" if r["v_x"] is None else f"{r['v_x']:.1f}x ({r['v_cores']:.2f})"
        a = f"failed: {r['a_err'][:80]}" if r["a_x"] is None else f"{r['a_x']:.1f}x"
        k = f"failed: {r['k_err'][:80]}" if r["k_x"] is None else f"{r['k_x']:.1f}x"
        print(f"| {i} | {peer(r['z'])} | {peer(r['b'])} | {v} | {ratio(r['v_x'], r['z'])} | {ratio(r['v_x'], r['b'])} "
              f"| {a} | {ratio(r['a_x'], r['z'])} | {ratio(r['a_x'], r['b'])} "
              f"| {k} | {ratio(r['k_x'], r['z'])} | {ratio(r['k_x'], r['b'])} |")

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    ok = [r for r in rounds if "error" not in r["z"] and "error" not in r["b"]]
    result = {key: med(r[vk] / r[pk]["x_realtime"] for r in ok if r[vk] is not None)
              for key, vk, pk in (("zita", "v_x", "z"), ("brutefir", "v_x", "b"),
                                  ("zita_unreceived", "a_x", "z"), ("brutefir_unreceived", "a_x", "b"),
                                  ("zita_bank", "k_x", "z"), ("brutefir_bank", "k_x", "b"))}
    def t(v):
        return "none" if v is None else f"**{v:.2f}x**"
    def x(values):
        v = med(values)
        return "none" if v is None else f"{v:.1f}x"
    print(f"| median | {x(r['z'].get('x_realtime') for r in rounds)} | {x(r['b'].get('x_realtime') for r in rounds)} "
          f"| {x(r['v_x'] for r in rounds)} | {t(result['zita'])} | {t(result['brutefir'])} "
          f"| {x(r['a_x'] for r in rounds)} | {t(result['zita_unreceived'])} | {t(result['brutefir_unreceived'])} "
          f"| {x(r['k_x'] for r in rounds)} | {t(result['zita_bank'])} | {t(result['brutefir_bank'])} |")
    print(f"\nVigil unpaced / zita-convolver, S3 at 256 frames, median of {len(ok)} rounds: {t(result['zita'])} with "
          f"vigil-listen receiving ({t(result['zita_unreceived'])} without, {t(result['zita_bank'])} the bank alone); "
          f"/ BruteFIR: {t(result['brutefir'])} ({t(result['brutefir_unreceived'])} without, "
          f"{t(result['brutefir_bank'])} the bank alone).", flush=True)
    return result


def ensure_gnuradio(gr_python):
    if subprocess.call([gr_python, "-c", "import gnuradio"], stderr=subprocess.DEVNULL) == 0:
        return
    print("\ninstalling gnuradio for the comparison (apt-get)...", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    # A fresh machine may have no package lists yet: install then finds nothing.
    subprocess.check_call(sudo + ["apt-get", "update", "-qq"], env=env, stdout=subprocess.DEVNULL)
    subprocess.check_call(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "gnuradio"], env=env,
                          stdout=subprocess.DEVNULL)


def run_gnuradio(cmd):
    """One GNU Radio run (bench/gnuradio_bank.py): its JSON line. Once in a session of 28 Nov it
    exited 0 having printed nothing; such a run is repeated once, and a second failure names the
    command and what it printed instead of a JSON traceback."""
    for attempt in (1, 2):
        run = subprocess.run(cmd, capture_output=True, text=True)
        lines = run.stdout.strip().splitlines()
        if run.returncode == 0 and lines:
            try:
                return json.loads(lines[-1])
            except json.JSONDecodeError:
                pass
        print(f"(GNU Radio run {attempt} gave no result: exit {run.returncode}, stdout {run.stdout.strip()[-200:]!r}, "
              f"stderr {run.stderr.strip()[-300:]!r})", file=sys.stderr, flush=True)
    sys.exit(f"bench_scenarios: GNU Radio failed twice: {' '.join(cmd)}")


def compare_gnuradio(args, work, scen, best):
    """The scenario's filtering through GNU Radio 3.10 (one fft_filter_fff per band, 8191 taps) on
    this CPU, against Vigil's whole scenario unpaced (the source as fast as the pipeline takes it)."""
    gr_python = "/usr/bin/python3"  # Debian's, where its gnuradio package installs
    ensure_gnuradio(gr_python)
    channels, rate = NOMINAL_CHANNELS[scen], RATES[scen]
    taps = design_taps(args, work, scen)
    # Rounds of GNU Radio, Vigil with vigil-listen, Vigil with no receiver, one after the other, so
    # that the machine's drift (a shared 2-vCPU guest moves 20-40 % over minutes) hits all three
    # alike: the ratio of each round, and the medians. GNU Radio gets about 4 s of wall time a round.
    signal_s = args.gnuradio_signal_s * GNURADIO_SIGNAL_SCALE[scen]
    gr_script = os.path.join(os.path.dirname(__file__), "..", "bench", "gnuradio_bank.py")
    rounds = []
    for _ in range(args.gnuradio_rounds):
        gr = run_gnuradio([gr_python, gr_script, str(rate), str(channels), str(signal_s)] + taps)
        vigil = run_step(args, scen, channels, 0, work)  # rate_factor 0: unpaced
        # The same with the band data going to a socket nobody reads (as GNU Radio's null sink takes
        # its output): no receiver of the data shares the two cores.
        alone = run_unreceived(args, scen, channels, work)
        # S3 again at GNU Radio's filter delay, vigil-listen receiving.
        at_gr = run_step(args, scen, channels, 0, work, s3_block=GNURADIO_S3_BLOCK) if scen == "s3" else {}
        at_gr_alone = run_unreceived(args, scen, channels, work, s3_block=GNURADIO_S3_BLOCK) if scen == "s3" else {}
        # A failed Vigil run is shown as such and left out of the medians, never counted as 0x.
        def x_of(run):
            return run["samples_per_s"] / (channels * rate) if run and "error" not in run else None
        rounds.append({"gr": gr, "gr_x": gr["x_realtime"], "backend": vigil.get("backend", "?"),
                       "v_x": x_of(vigil), "a_x": x_of(alone), "d_x": x_of(at_gr), "e_x": x_of(at_gr_alone),
                       "v_err": vigil.get("error"), "a_err": alone.get("error"), "d_err": at_gr.get("error"),
                       "e_err": at_gr_alone.get("error")})
    name = scen.upper()
    print(f"\n### {name} against GNU Radio {rounds[0]['gr']['gnuradio']} on this CPU ({len(rounds)} rounds)\n")
    print(f"GNU Radio: per channel ({channels}) a null source -> {len(taps)} x fft_filter_fff (8191 taps) -> null "
          f"sinks, {signal_s:g} s of signal. Vigil (backend {rounds[0]['backend']}"
          f"{', pipeline.threads ' + str(args.threads[scen]) if scen in args.threads else ''}): the whole {name} unpaced for "
          f"{args.seconds:g} s ({TITLES[scen].split(': ', 1)[1]}), with vigil-listen receiving on the same cores, then "
          "with its band data sent to a socket nobody reads (as GNU Radio's null sink); the sustained rate, the "
          "start left out.\n")
    at_delay = scen == "s3"
    if at_delay:
        print(f"Last, S3 again at GNU Radio's delay, with vigil-listen receiving and with no receiver: chunks of "
              f"{GNURADIO_S3_BLOCK} frames and a filter delay of {GNURADIO_S3_BLOCK} (max_latency_frames), so that a "
              f"sample waits at most {2 * GNURADIO_S3_BLOCK} frames for its band output, as in GNU Radio's 8194-frame "
              "blocks.\n")
    print("| round | GNU Radio x real time | Vigil, vigil-listen receiving | ratio | Vigil, no receiver | ratio |"
          + (f" Vigil at GNU Radio's delay ({GNURADIO_S3_BLOCK}-frame chunks), receiving | ratio | the same, no "
             "receiver | ratio |" if at_delay else ""))
    print("|---|---|---|---|---|---|" + ("---|---|---|---|" if at_delay else ""))
    def cells(r, key):
        if r[key] is None:
            return f"failed: {r[key[0] + '_err']} | "
        return f"{r[key]:.1f}x | {r[key] / r['gr_x']:.2f}x"

    for i, r in enumerate(rounds, 1):
        print(f"| {i} | {r['gr_x']:.1f}x | {cells(r, 'v_x')} | {cells(r, 'a_x')} |"
              + (f" {cells(r, 'd_x')} | {cells(r, 'e_x')} |" if at_delay else ""))

    def median(values):
        values = list(values)
        return statistics.median(values) if values else None

    def text(v, form):
        return "none ran" if v is None else form.format(v)

    med = {k: median(r[k] for r in rounds if r[k] is not None) for k in ("gr_x", "v_x", "a_x", "d_x", "e_x")}
    v_ratio = median(r["v_x"] / r["gr_x"] for r in rounds if r["v_x"] is not None)
    a_ratio = median(r["a_x"] / r["gr_x"] for r in rounds if r["a_x"] is not None)
    d_ratio = median(r["d_x"] / r["gr_x"] for r in rounds if r["d_x"] is not None)
    e_ratio = median(r["e_x"] / r["gr_x"] for r in rounds if r["e_x"] is not None)
    print(f"| median | {med['gr_x']:.1f}x | {text(med['v_x'], '{:.1f}x')} | {text(v_ratio, '**{:.2f}x**')} "
          f"| {text(med['a_x'], '{:.1f}x')} | {text(a_ratio, '**{:.2f}x**')} |"
          + (f" {text(med['d_x'], '{:.1f}x')} | {text(d_ratio, '**{:.2f}x**')} | {text(med['e_x'], '{:.1f}x')} "
             f"| {text(e_ratio, '**{:.2f}x**')} |" if at_delay else ""))
    if best:
        b_x = best["samples_per_s"] / (channels * rate)
        print(f"\nVigil paced, highest load with zero deadline misses and drops: {fmt_rate(best['samples_per_s'])} "
              f"samples/s ({b_x:.1f}x).")
    def of_runs(key, ratio):
        n = sum(1 for r in rounds if r[key] is not None)
        if ratio is None:
            return "no run completed"
        some = f" (median of the {n} of {len(rounds)} rounds that completed)" if n < len(rounds) else ""
        return f"{ratio:.2f}x{some}"

    print(f"\nVigil unpaced / GNU Radio, {name}, median of {len(rounds)} rounds: {of_runs('v_x', v_ratio)} with "
          f"vigil-listen receiving on the same cores, {of_runs('a_x', a_ratio)} with no receiver"
          + (f", {of_runs('d_x', d_ratio)} at GNU Radio's delay with vigil-listen receiving "
             f"({of_runs('e_x', e_ratio)} without)" if at_delay else
             " (S2's bank has GNU Radio's filter delay already: max_latency_frames 8192, in 1024-frame chunks)"), flush=True)
    return {"ratio": v_ratio, "ratio_unreceived": a_ratio, "vigil_x": med["v_x"], "gnuradio_x": med["gr_x"],
            "ratio_at_gnuradio_delay": d_ratio if at_delay else v_ratio,
            "ratio_at_gnuradio_delay_unreceived": e_ratio if at_delay else a_ratio}


# Issue 9's goals, by the backend that ran: each a scenario, the goal's words, and a function of
# that scenario's rows (every step's, in order) and its GNU Radio comparison (None unless --gnuradio)
# giving (measured, met): met is True, False, "reported" where the goal asks for a report only, or
# "not run" where what it needs did not run. A paced goal counts only a clean step (zero misses,
# drops, losses and late source chunks).
def row_at(rows, channels, rf):
    return next((r for r in rows if r["channels"] == channels and r["rate_factor"] == rf), None)


def p99_goal(channels, limit_us):
    def judge(rows, _gr):
        r = row_at(rows, channels, 1)
        if r is None:
            return f"step {channels}x1 not run", "not run"
        if "error" in r:
            return f"step {channels}x1 failed: {r['error'][:100]}", False
        clean = "" if r["ok"] else ", not clean"
        return f"p99 {r['latency_us']['p99']} us{clean}", r["ok"] and r["latency_us"]["p99"] <= limit_us
    return judge


def clean_best(rows):
    return max(clean_rows(rows), key=lambda r: r["samples_per_s"], default=None)


def clean_rows(rows):
    return [r for r in rows if "error" not in r and r["ok"]]


def rate_goal(least_per_s):
    def judge(rows, _gr):
        b = clean_best(rows)
        if b is None:
            return "no clean step", False
        load = f"{fmt_rate(b['samples_per_s'])} samples/s ({b['channels']} ch x{b['rate_factor']})"
        return f"highest clean load {load}", b["samples_per_s"] >= least_per_s
    return judge


def channels_goal(least):
    def judge(rows, _gr):
        b = max(clean_rows(rows), key=lambda r: r["channels"], default=None)
        if b is None:
            return "no clean step", False
        return f"{b['channels']} channels clean (x{b['rate_factor']})", b["channels"] >= least
    return judge


def report_channels(rows, _gr):
    b = clean_best(rows)
    return (f"{b['channels']} channel{'s' if b['channels'] != 1 else ''} at x{b['rate_factor']}" if b
            else "no clean step"), "reported"


def gnuradio_goal(least):
    def judge(_rows, cmp):
        gr = cmp.get("gnuradio")
        if not gr or gr.get("ratio") is None:
            return "the comparison did not run (--gnuradio)", "not run"
        return f"{gr['ratio']:.2f}x GNU Radio ({gr['vigil_x']:.1f}x against {gr['gnuradio_x']:.1f}x)", \
            gr["ratio"] >= least
    return judge


def peer_goal(key, least, name):
    def judge(_rows, cmp):
        v = (cmp.get("peers") or {}).get(key)
        if v is None:
            return "the comparison did not run (--peers)", "not run"
        return f"{v:.2f}x {name}, vigil-listen receiving", v >= least
    return judge


def gnuradio_delay_goal(least):
    def judge(_rows, cmp):
        gr = cmp.get("gnuradio")
        if not gr or gr.get("ratio_at_gnuradio_delay") is None:
            return "the comparison did not run (--gnuradio)", "not run"
        unreceived = gr.get("ratio_at_gnuradio_delay_unreceived")
        alone = f" ({unreceived:.2f}x with no receiver)" if unreceived is not None else ""
        return f"{gr['ratio_at_gnuradio_delay']:.2f}x GNU Radio at its delay, vigil-listen receiving{alone}", \
            gr["ratio_at_gnuradio_delay"] >= least
    return judge


# Issue 51's goals (issue 9's where 51 kept them): on the CPU only ratios to the peers of the same run.
GOALS = {
    "cuda": [("s1", "13 G samples/s sustained, zero misses", rate_goal(13e9)),
             ("s1", "p99 <= 1 ms at nominal load (16 channels)", p99_goal(16, 1000)),
             ("s2", "p99 <= 250 us at nominal load (64 channels)", p99_goal(64, 250)),
             ("s2", ">= 1000 channels sustained", channels_goal(1000)),
             ("s3", "p99 <= 60 us (2 channels)", p99_goal(2, 60))],
    "cpu": [("s1", "report the sustainable channel count", report_channels),
            ("s2", ">= 2x GNU Radio, same run, at its filter delay", gnuradio_goal(2.0)),
            ("s3", ">= 1.5x GNU Radio at its delay", gnuradio_delay_goal(1.5)),
            ("s3", ">= 5x zita-convolver at 256 frames", peer_goal("zita", 5.0, "zita-convolver")),
            ("s3", ">= 5x BruteFIR at 256 frames", peer_goal("brutefir", 5.0, "BruteFIR"))],
}


def print_goals(rows_of, gnuradio_of, peers=None):
    """After the scenarios: the goals for the backend that ran, each with what this run measured
    and whether it meets it (a goal of a scenario that did not run is left out)."""
    backends = {r.get("backend") for rows in rows_of.values() for r in rows if "error" not in r}
    backend = "cuda" if "cuda" in backends else "cpu" if backends else None
    if backend is None:
        return
    where = "the H100/H200 test machine" if backend == "cuda" else "the CPU, ratios to the peers on the same cores"
    print(f"\n### Against the goals for {where} (backend {backend})\n")
    print("| scenario | goal | this run | met? |")
    print("|---|---|---|---|")
    for scen, goal, judge in GOALS[backend]:
        if scen not in rows_of:
            continue
        text, met = judge(rows_of[scen], {"gnuradio": gnuradio_of.get(scen), "peers": peers})
        verdict = met if isinstance(met, str) else "yes" if met else "**no**"
        print(f"| {scen.upper()} | {goal} | {text} | {verdict} |")
    sys.stdout.flush()


def pace_text(rate_factor):
    return f"at {rate_factor}x real time" if rate_factor else "unpaced (as fast as it goes)"


def fmt_rate(v):
    return f"{v / 1e9:.2f} G" if v >= 1e9 else f"{v / 1e6:.1f} M" if v >= 1e6 else f"{v / 1e3:.0f} k"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build",
                   help="the build folder with apps/vigild and apps/vigil-listen (default: build, as "
                        "scripts/test.sh makes it)")
    p.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"],
                   help="the configs' pipeline.backend (auto: CUDA where a GPU is, else the CPU); the built-in "
                        "load steps are the GPU's for cuda, the 2-core CPU's otherwise")
    p.add_argument("--seconds", type=float, default=5, help="how long vigild runs each step (default 5)")
    p.add_argument("--scenarios", default=os.path.join(os.path.dirname(__file__), "..", "bench", "scenarios"),
                   help="the folder of the scenario configs (default: bench/scenarios)")
    p.add_argument("--only", default="s1,s2,s3", help="scenarios to run, e.g. s2,s3")
    p.add_argument("--failures", type=int, default=1, help="stop a scenario after this many failed steps in a row")
    p.add_argument("--json", help="also write every step as JSON lines to this file")
    p.add_argument("--steps", action="append", default=[], metavar="SCEN:CHxRF[,CHxRF...]",
                   help="the load steps of a scenario instead of the built-in ones, e.g. s1:800x1 or s2:64x1,1024x1 "
                        "(channels x rate factor); may be given once per scenario")
    p.add_argument("--threads", action="append", default=[], metavar="SCEN:N",
                   help="pipeline.threads for a scenario instead of the runner's choice (THREADS; 0 = one per core "
                        "less one), e.g. s2:2; may be given once per scenario")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each load step this many times; a step is clean only if every run is (what a rig can "
                        "rely on: the table gives each run's p99 and how many runs were clean)")
    p.add_argument("--busy-poll", action="store_true",
                   help="S2 and S3 (the scenarios with a latency goal) with pipeline.busy_poll: their threads "
                        "spin instead of sleeping, and so does vigil-listen (--busy-poll)")
    p.add_argument("--gro", action="store_true",
                   help="vigil-listen --gro: each of vigild's GSO sends arrives as one receive (on loopback the "
                        "sender then delivers it whole; the receiver's kernel drops count receives)")
    p.add_argument("--gnuradio", action="store_true",
                   help="also run S2 and S3 (those of --only) through GNU Radio (installs Debian's gnuradio if "
                        "missing) and Vigil unpaced")
    p.add_argument("--peers", action="store_true",
                   help="also run S3 (if in --only) against zita-convolver (bench/zita_bank, built where "
                        "libzita-convolver-dev is installed) and BruteFIR (Debian's brutefir) at its 256-frame latency")
    p.add_argument("--peers-rounds", type=int, default=3, help="rounds of the --peers comparison (default 3)")
    p.add_argument("--peers-signal-s", type=float, default=300,
                   help="seconds of signal zita-convolver and BruteFIR filter each round (default 300)")
    p.add_argument("--gnuradio-rounds", type=int, default=3,
                   help="rounds of the comparison (GNU Radio, Vigil received, Vigil unreceived, in turn); medians")
    p.add_argument("--gnuradio-signal-s", type=float, default=40,
                   help="seconds of S2's signal GNU Radio filters in each round (about 4 s of wall time here; "
                        "S3 gets 50 times as much)")
    p.add_argument("--host-probe-s", type=float, default=4,
                   help="seconds of bench/host_jitter before the runs (0: none): the host's own floor for the "
                        "latency tails, without Vigil")
    args = p.parse_args()
    for name, value, least in (("--repeat", args.repeat, 1), ("--failures", args.failures, 1),
                               ("--gnuradio-rounds", args.gnuradio_rounds, 1), ("--peers-rounds", args.peers_rounds, 1)):
        if value < least:
            p.error(f"{name} must be at least {least}, got {value}")
    # vigild reads --seconds 0 as "until stopped"; the runner needs each step to end.
    for name, value in (("--seconds", args.seconds), ("--gnuradio-signal-s", args.gnuradio_signal_s),
                        ("--peers-signal-s", args.peers_signal_s)):
        if not 0 < value < 1e6:
            p.error(f"{name} must be a number of seconds above 0, got {value:g}")
    if not 0 <= args.host_probe_s < 1e6:
        p.error(f"--host-probe-s must be 0 (no probe) or more, got {args.host_probe_s:g}")
    unknown = [s for s in args.only.split(",") if s not in FILES]
    if unknown:
        p.error(f"--only: unknown scenario {unknown[0]!r}: expected a list of s1, s2, s3, e.g. s2,s3")
    threads = {}
    for spec in args.threads:
        m = re.fullmatch(r"(s[123]):(\d+)", spec)
        if not m or not 0 <= int(m.group(2)) <= 256:
            p.error(f"--threads {spec!r}: expected SCEN:N with N 0..256, e.g. s2:2")
        threads[m.group(1)] = int(m.group(2))
    args.threads = threads
    loads = dict(LOADS["cuda" if args.backend == "cuda" else "cpu"])
    for spec in args.steps:
        m = re.fullmatch(r"(s[123]):(\d+x\d+(?:,\d+x\d+)*)", spec)
        if not m:
            p.error(f"--steps {spec!r}: expected SCEN:CHxRF[,CHxRF...], e.g. s2:64x1,1024x1")
        loads[m.group(1)] = [tuple(int(v) for v in step.split("x")) for step in m.group(2).split(",")]
        if any(ch == 0 for ch, _ in loads[m.group(1)]):
            p.error(f"--steps {spec!r}: a step needs at least 1 channel (a rate factor of 0 runs unpaced)")
    needed = ["apps/vigild", "apps/vigil-listen"] + (["apps/vigil-dsp"] if args.gnuradio or args.peers else [])
    missing = [n for n in needed if not os.access(os.path.join(args.build, n), os.X_OK)]
    if missing:
        p.error(f"--build {args.build}: no {os.path.join(args.build, missing[0])}; build first (scripts/test.sh "
                "builds into build/) or name the build folder")
    for scen in args.only.split(","):
        if not os.path.isfile(os.path.join(args.scenarios, FILES[scen])):
            p.error(f"--scenarios {args.scenarios}: no {FILES[scen]} for {scen}")
    out = open(args.json, "w") if args.json else None
    if args.host_probe_s > 0:
        probe_host(args)
    best_of = {}  # each scenario's highest clean load, for the GNU Radio comparison
    rows_of, gnuradio_of = {}, {}  # every step's row by scenario, and the comparisons: for the goals
    with tempfile.TemporaryDirectory() as work:
        for scen in args.only.split(","):
            poll = ", pipeline.busy_poll, vigil-listen --busy-poll" if args.busy_poll and scen in ("s2", "s3") else ""
            poll += ", vigil-listen --gro" if args.gro else ""
            poll += f", pipeline.threads {args.threads[scen]}" if scen in args.threads else ""
            runs = f", {args.repeat} runs a step" if args.repeat > 1 else ""
            print(f"\n### {TITLES[scen]} (backend {args.backend}{poll}, {args.seconds:g} s a step{runs})\n", flush=True)
            if args.repeat > 1:
                print("Each step ran --repeat times: the lowest sustained rate, the median p50, the worst p99 (each "
                      "run's in brackets), p99.9 and max, the counts summed; a step is clean only if every run "
                      "was.\n")
            print("| channels | rate factor | input samples/s (sustained / offered) | latency p50 | p99 | p99.9 | max "
                  "| deadline misses | dropped (vigild) | lost on the way | source late | ok |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
            best, last, fails, hosts = None, None, 0, []
            rows_of[scen] = []
            for channels, rf in loads[scen]:
                rows = [run_step(args, scen, channels, rf, work) for _ in range(args.repeat)]
                r = rows[0] if args.repeat == 1 else combine_runs(rows)
                rows_of[scen].append(r)
                last = r if "error" not in r else last
                hosts.append((channels, rf, r["host"]))
                if out:
                    for one in rows:
                        out.write(json.dumps(one) + "\n")
                if "error" in r:
                    print(f"| {channels} | {rf} | {r['error']} | | | | | | | | | no |", flush=True)
                    fails += 1
                else:
                    l = r["latency_us"]
                    p99 = f"{l['p99']} us"
                    if args.repeat > 1:
                        p99 += " (" + ", ".join(str(v) for v in r["p99_each_us"]) + ")"
                    ok = "yes" if r["ok"] else "no"
                    if args.repeat > 1:
                        ok += f" ({r['clean_runs']}/{r['runs']} clean)"
                    print(f"| {channels} | {rf} | {fmt_rate(r['samples_per_s'])} / {fmt_rate(r['nominal_per_s'])} "
                          f"| {l['p50']:g} us | {p99} | {l['p999']} us | {l['max']} us | {r['deadline_misses']} "
                          f"| {r['dropped_frames']} | {r['lost_at_receiver']} | {r['source_late_chunks']} "
                          f"| {ok} |", flush=True)
                    if r["ok"]:
                        best, fails = r, 0
                    else:
                        fails += 1
                if fails >= args.failures:
                    break
            print_host_load(hosts, args.repeat)
            print_fir_delays(scen, best or last)
            if best:
                x_rt = best["samples_per_s"] / (RATES[scen] * NOMINAL_CHANNELS[scen])
                every = f" in all {args.repeat} runs" if args.repeat > 1 else ""
                plural = "s" if best["channels"] != 1 else ""
                print(f"\nHighest load with zero misses, drops and late source chunks{every}: {best['channels']} "
                      f"channel{plural} {pace_text(best['rate_factor'])} = {fmt_rate(best['samples_per_s'])} samples/s "
                      "sustained "
                      f"({x_rt:.1f}x the nominal {NOMINAL_CHANNELS[scen]}-channel rig), backend {best['backend']}.",
                      flush=True)
            else:
                print("\nNo load step ran without misses or drops.", flush=True)
            best_of[scen] = best
        if args.gnuradio:
            for scen in args.only.split(","):
                if scen in GNURADIO_BANDS:
                    gnuradio_of[scen] = compare_gnuradio(args, work, scen, best_of.get(scen))
        peers = compare_peers(args, work, best_of.get("s3")) if args.peers and "s3" in args.only.split(",") else None
    print_goals(rows_of, gnuradio_of, peers)


if __name__ == "__main__":
    main()
