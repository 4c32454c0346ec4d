#!/usr/bin/env python3
# CuPy doing what bench/spectrum_cuda_bench.cpp times: periodic Hann window -> real FFT ->
# magnitude, device-resident, 64 x 1024 and 1 x 65536 float32 points; CUDA-event time around the
# three steps after 10 warm-up calls (plan cache warm), median of REPS. One JSON object per shape.
import json, sys
import cupy as cp

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
for rows, n in ((64, 1024), (1, 65536)):
    x = cp.random.standard_normal((rows, n), dtype=cp.float32)
    i = cp.arange(n, dtype=cp.float32)
    w = (0.5 - 0.5 * cp.cos(2 * cp.pi * i / n)).astype(cp.float32)  # periodic Hann
    def spectrum():
        return cp.abs(cp.fft.rfft(x * w, axis=-1))
    for _ in range(10):
        spectrum()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        y = spectrum()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    times.sort()
    print(json.dumps({'rows': rows, 'n': n, 'median_s': times[len(times) // 2], 'dtype': str(y.dtype),
                      'cupy': cp.__version__}), flush=True)
