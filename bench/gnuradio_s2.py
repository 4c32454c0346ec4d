#!/usr/bin/python3
# S2 through GNU Radio (issue 9's comparison): per channel a null source (float) -> head (SECONDS
# of signal at 51.2 kHz) -> 4 x fft_filter_fff with Vigil's own band taps -> null sink, all channels
# in one flowgraph on GNU Radio's thread-per-block scheduler. Prints the throughput as a JSON line.
# Usage: gnuradio_s2.py TAPS0.f64 TAPS1.f64 TAPS2.f64 TAPS3.f64 CHANNELS SECONDS
import json, sys, time
import numpy as np
from gnuradio import blocks, filter, gr

taps = [np.fromfile(f, dtype=np.float64).astype(np.float32).tolist() for f in sys.argv[1:5]]
channels, seconds = int(sys.argv[5]), float(sys.argv[6])
rate = 51200
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
print(json.dumps({"gnuradio": gr.version(), "channels": channels, "signal_s": seconds, "elapsed_s": elapsed,
                  "samples_per_s": channels * n / elapsed, "x_realtime": seconds / elapsed}), flush=True)
