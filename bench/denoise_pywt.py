#!/usr/bin/python3
# PyWavelets doing what vigil's WaveletDenoiser does (db8, periodization, max level, sigma from
# median(|cD1|)/0.6745, universal threshold, soft), timed on 2^16..2^24 samples; median of REPS.
# Prints one JSON object per size: {"n", "dtype", "median_s"}. Needs python3-pywt (Debian).
import json, sys, time, numpy as np, pywt

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for dtype in ('float64', 'float32'):
    for e in range(16, 25, 2):
        n = 1 << e
        x = np.random.default_rng(1).standard_normal(n).astype(dtype)
        level = pywt.dwt_max_level(n, pywt.Wavelet('db8').dec_len)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            c = pywt.wavedec(x, 'db8', mode='periodization', level=level)
            sigma = np.median(np.abs(c[-1])) / 0.6745
            thr = sigma * np.sqrt(2 * np.log(n))
            c = [c[0]] + [pywt.threshold(d, thr, mode='soft') for d in c[1:]]
            y = pywt.waverec(c, 'db8', mode='periodization')
            times.append(time.perf_counter() - t0)
        print(json.dumps({'n': n, 'dtype': dtype, 'median_s': float(np.median(times))}), flush=True)
