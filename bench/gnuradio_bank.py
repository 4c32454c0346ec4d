#!/usr/bin/python3
# A FIR bank through GNU Radio (issue 9's comparison, S2 and S3): per channel a null source (float)
# -> head (SECONDS of signal at RATE) -> one fft_filter_fff per taps file -> null sink, all channels
# in one flowgraph on GNU Radio's thread-per-block scheduler. fft_filter_fff's cost depends on the
# number of taps, not their values. Prints the throughput as a JSON line.
# Usage: gnuradio_bank.py RATE CHANNELS SECONDS TAPS.f64...
import json, sys, time
import numpy as np
from gnuradio import blocks, filter, gr

if len(sys.argv) < 5:
    sys.exit("usage: gnuradio_bank.py RATE CHANNELS SECONDS TAPS.f64...")
rate, channels, seconds = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
taps = [np.fromfile(f, dtype=np.float64).astype(np.float32).tolist() for f in sys.argv[4:]]
n = int(seconds * rate)
tb = gr.top_block()
keep = []
for c in range(channels):
    src = blocks.null_source(gr.sizeof_float)
    head = blocks.head(gr.sizeof_float, n)
    tb.connect(src, head)
    keep += [src, head]
    for t in taps:
        f = filter.fft_filter_fff(1, t, 1)
        sink = blocks.null_sink(gr.sizeof_float)
        tb.connect(head, f, sink)
        keep += [f, sink]
t0 = time.monotonic()
tb.run()
elapsed = time.monotonic() - t0
print(json.dumps({"gnuradio": gr.version(), "rate_hz": rate, "channels": channels, "bands": len(taps),
                  "taps": [len(t) for t in taps], "signal_s": seconds, "elapsed_s": elapsed,
                  "samples_per_s": channels * n / elapsed, "x_realtime": seconds / elapsed}), flush=True)
