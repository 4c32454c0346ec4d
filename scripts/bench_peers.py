"""S3 against the engines people use for long crossovers at a short latency (issue 51):
zita-convolver (bench/zita_bank, the library behind jconvolver) and BruteFIR (Debian's brutefir,
a generated config reading a raw file as fast as it can), each doing S3's work: 2 channels x 4
bands x 8191 taps at 48 kHz with a latency of 256 frames. Used by bench_scenarios.py --peers; the
parsing and config functions are tested by tests/bench/bench_peers_test.py."""
import array, json, os, random, re, subprocess, sys, time

from host_load import busy_cpu_s

QUANTUM = 256  # S3's chunk: the latency every engine is held to
# zita-convolver's options tried once per comparison, the fastest kept ("its best options"):
# its largest partition and its vector mode.
ZITA_TRIALS = [(maxpart, vector) for maxpart in (1024, 2048, 4096, 8192) for vector in (False, True)]


def f64_to_f32(src, dst):
    """A float64 taps file (vigil-dsp firdesign) as raw little-endian float32 (BruteFIR's coefficients)."""
    d = array.array("d")
    with open(src, "rb") as f:
        d.frombytes(f.read())
    if sys.byteorder != "little":
        d.byteswap()
    out = array.array("f", d)
    if sys.byteorder != "little":
        out.byteswap()
    with open(dst, "wb") as f:
        out.tofile(f)
    return list(d)


def write_input(path, rate, channels, seconds, seed=None):
    """Interleaved float32 random samples: one second generated and repeated `seconds` times (as
    the scenario's source repeats its signal). Returns the first second, channel by channel."""
    rng = random.Random(seed)
    frames = int(rate)
    block = array.array("f", (rng.uniform(-1.0, 1.0) for _ in range(frames * channels)))
    if sys.byteorder != "little":
        block.byteswap()
    with open(path, "wb") as f:
        for _ in range(int(seconds)):
            block.tofile(f)
    if sys.byteorder != "little":
        block.byteswap()
    return [block[c::channels] for c in range(channels)]


def brutefir_config(rate, channels, coeffs, input_path, output_path, wisdom_path, partition=QUANTUM):
    """BruteFIR's config for the bank: every channel through every coefficient file into an output
    of its own, partitions of `partition` frames (its latency) covering the longest filter, the
    filters of channel c in process c (one per channel: BruteFIR's way of using several cores)."""
    taps = max(n for _, n in coeffs)
    parts = -(-taps // partition)
    bands = len(coeffs)
    outs = ", ".join(f'"o{c}_{b}"' for c in range(channels) for b in range(bands))
    ins = ", ".join(f'"i{c}"' for c in range(channels))
    lines = [f"sampling_rate: {int(rate)};", f"filter_length: {partition},{parts};", "float_bits: 32;",
             "overflow_warnings: false;", "show_progress: false;", "allow_poll_mode: false;",
             "monitor_rate: false;", "powersave: false;", "lock_memory: false;",
             f'convolver_config: "{wisdom_path}";']
    lines += [f'coeff "c{b}" {{ filename: "{path}"; format: "FLOAT_LE"; }};' for b, (path, _) in enumerate(coeffs)]
    lines.append(f'input {ins} {{ device: "file" {{ path: "{input_path}"; }}; sample: "FLOAT_LE"; '
                 f"channels: {channels}; }};")
    lines.append(f'output {outs} {{ device: "file" {{ path: "{output_path}"; }}; sample: "FLOAT_LE"; '
                 f"channels: {channels * bands}; dither: false; }};")
    lines += [f'filter "f{c}_{b}" {{ from_inputs: "i{c}"; to_outputs: "o{c}_{b}"; coeff: "c{b}"; process: {c}; }};'
              for c in range(channels) for b in range(bands)]
    return "\n".join(lines) + "\n"


def brutefir_times(lines):
    """From BruteFIR's stderr lines with their arrival times [(t, line)]: (start, end) of its audio
    processing ("Audio processing starts now" to "Finished!"), None where either is missing."""
    start = next((t for t, l in lines if "Audio processing starts now" in l), None)
    end = next((t for t, l in lines if l.strip().startswith("Finished")), None)
    return (start, end) if start is not None and end is not None else None


def brutefir_version(lines):
    m = next((re.search(r"BruteFIR (v\S+)", l) for _, l in lines if "BruteFIR v" in l), None)
    return m.group(1) if m else "?"


def run_brutefir(config_path, home):
    """BruteFIR on the config (its defaults file created in `home`): its stderr lines with their
    arrival times, the CPU seconds the whole machine was busy while it filtered (its filter
    processes are not children it waits for, so getrusage misses them; on a quiet machine this is
    BruteFIR's), its exit status."""
    proc = subprocess.Popen(["brutefir", config_path], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, HOME=home))
    lines, busy = [], {}
    for line in proc.stderr:
        lines.append((time.monotonic(), line))
        if "Audio processing starts now" in line:
            busy["start"] = busy_cpu_s()
        elif line.strip().startswith("Finished"):
            busy["end"] = busy_cpu_s()
    rc = proc.wait()
    return lines, busy.get("end", 0.0) - busy.get("start", 0.0), rc


def check_outputs(output_path, inputs, taps, channels, samples=48, seed=1):
    """The relative RMS error of `samples` random output samples of every channel x band (within
    the first second, whose input is known) against the direct convolution in double."""
    bands = len(taps)
    width = channels * bands
    raw = array.array("f")
    with open(output_path, "rb") as f:
        raw.frombytes(f.read(len(inputs[0]) * width * 4))
    if sys.byteorder != "little":
        raw.byteswap()
    rng = random.Random(seed)
    err2 = ref2 = 0.0
    for c in range(channels):
        x = inputs[c]
        for b in range(bands):
            h = taps[b]
            for _ in range(samples):
                n = rng.randrange(len(h), len(x))
                y = sum(h[k] * x[n - k] for k in range(len(h)))
                err2 += (raw[n * width + c * bands + b] - y) ** 2
                ref2 += y * y
    return (err2 / ref2) ** 0.5 if ref2 else float("inf")


def zita_result(stdout):
    """bench/zita_bank's JSON line (its last line), or None."""
    lines = stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


# Vigil's S3 bank alone, as the pipeline runs it (2 threads, the later partitions deferred on the
# second): the engine to set beside the engines, no source, no sending.
BANK_BENCH = "BM_S3CrossoverStage/2/1/real_time"


def bank_result(text):
    """bench/fir_bank_scenarios_bench's JSON (--benchmark_format=json): BANK_BENCH's x_real_time,
    or None."""
    try:
        runs = json.loads(text)["benchmarks"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    return next((r["x_real_time"] for r in runs if r.get("name") == BANK_BENCH and "x_real_time" in r), None)


def run_bank(build):
    bench = os.path.join(build, "bench/fir_bank_scenarios_bench")
    run = subprocess.run([bench, f"--benchmark_filter=^{BANK_BENCH.rsplit('/', 1)[0]}/", "--benchmark_min_time=1",
                          "--benchmark_format=json"], capture_output=True, text=True)
    x = bank_result(run.stdout) if run.returncode == 0 else None
    return {"x_realtime": x} if x else {"error": f"{bench} exit {run.returncode}: {run.stderr.strip()[-200:]}"}


def run_zita(zita, rate, channels, seconds, taps, maxpart, vector):
    cmd = [zita, str(rate), str(channels), str(seconds), str(QUANTUM), "--maxpart", str(maxpart)]
    cmd += (["--vector"] if vector else []) + list(taps)
    run = subprocess.run(cmd, capture_output=True, text=True)
    result = zita_result(run.stdout)
    if run.returncode != 0 or result is None:
        return {"error": f"zita_bank exit {run.returncode}: {run.stderr.strip()[-200:] or run.stdout.strip()[-200:]}"}
    return result


class Peers:
    """The two engines prepared once for a comparison (taps converted, input written, zita's best
    options found, BruteFIR's check run), then run a round at a time."""

    def __init__(self, build, work, rate, channels, taps_f64, signal_s):
        self.rate, self.channels, self.signal_s = rate, channels, signal_s
        self.zita = os.path.join(build, "bench/zita_bank")
        self.taps_f64 = taps_f64
        self.home = os.path.join(work, "brutefir-home")
        os.makedirs(self.home, exist_ok=True)
        coeffs, self.taps = [], []
        for i, path in enumerate(taps_f64):
            f32 = os.path.join(work, f"peer-taps{i}.f32")
            self.taps.append(f64_to_f32(path, f32))
            coeffs.append((f32, len(self.taps[-1])))
        self.input = os.path.join(work, "peer-input.raw")
        write_input(self.input, rate, channels, signal_s)
        wisdom = os.path.join(work, "brutefir-wisdom")
        self.config = os.path.join(work, "brutefir.conf")
        open(self.config, "w").write(brutefir_config(rate, channels, coeffs, self.input, "/dev/null", wisdom))
        # The check: a short run into a file (its FFTW wisdom made then, kept for the timed runs).
        short = os.path.join(work, "peer-input-short.raw")
        self.first_second = write_input(short, rate, channels, 2, seed=7)
        check_out = os.path.join(work, "brutefir-check.raw")
        check_conf = os.path.join(work, "brutefir-check.conf")
        open(check_conf, "w").write(brutefir_config(rate, channels, coeffs, short, check_out, wisdom))
        lines, _, rc = run_brutefir(check_conf, self.home)
        self.brutefir_version = brutefir_version(lines)
        self.brutefir_error = None if rc == 0 else f"brutefir exit {rc}: {''.join(l for _, l in lines)[-300:]}"
        self.brutefir_check = check_outputs(check_out, self.first_second, self.taps, channels) if rc == 0 else None
        os.remove(check_out)
        # zita's best options on this machine: a short run of each, the fastest kept.
        trials, failed = [], []
        for maxpart, vector in ZITA_TRIALS:
            r = run_zita(self.zita, rate, channels, min(signal_s, 20), taps_f64, maxpart, vector)
            if "error" not in r:
                trials.append((r["x_realtime"], maxpart, vector))
            else:  # said in the report, never dropped silently
                failed.append((maxpart, vector, r["error"]))
        self.zita_options = max(trials)[1:] if trials else (8192, False)
        self.zita_trials = trials
        self.zita_failed = failed

    def run_zita(self):
        return run_zita(self.zita, self.rate, self.channels, self.signal_s, self.taps_f64, *self.zita_options)

    def run_brutefir(self):
        if self.brutefir_error:
            return {"error": self.brutefir_error}
        lines, cpu, rc = run_brutefir(self.config, self.home)
        span = brutefir_times(lines)
        if rc != 0 or span is None:
            return {"error": f"brutefir exit {rc}: {''.join(l for _, l in lines)[-300:]}"}
        elapsed = span[1] - span[0]
        return {"x_realtime": self.signal_s / elapsed, "samples_per_s": self.signal_s * self.rate * self.channels / elapsed,
                "cpu_cores": cpu / elapsed, "elapsed_s": elapsed}
