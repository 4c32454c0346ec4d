#!/usr/bin/env python3
# CuPy's overlap-add convolution on the shapes of bench/fir_cuda_bench.cpp: 16 channels x 2^20
# float32 samples, one filter of M taps, device-resident; CUDA-event time after warm-up, median
# of REPS. Prints one JSON object per M.
import json, sys
import cupy as cp
import cupyx.scipy.signal as cs

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
x = cp.random.standard_normal((16, 1 << 20), dtype=cp.float32)
for m in (64, 256, 1024, 8192):
    h = cp.random.standard_normal((1, m), dtype=cp.float32)
    for _ in range(3):
        cs.oaconvolve(x, h, mode='full', axes=1)
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        y = cs.oaconvolve(x, h, mode='full', axes=1)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    times.sort()
    print(json.dumps({'m': m, 'median_s': times[len(times) // 2], 'dtype': str(y.dtype), 'cupy': cp.__version__}),
          flush=True)
