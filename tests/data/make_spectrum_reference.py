#!/usr/bin/python3
# Reference PSDs for tests/dsp/welch_psd_test.cpp. Debian 12: python3-scipy 1.10.1, numpy 1.24.2.
# Run from tests/data: /usr/bin/python3 make_spectrum_reference.py
# psd_x.bin: 10000 samples, numpy default_rng(99) normal (sd 0.5) + 1.5 sin(2 pi 123.4 t) + 0.3, fs 1000.
# welch_W_N.bin: scipy.signal.welch(x, fs=1000, window=W, nperseg=N) (noverlap N/2, detrend
# 'constant', one-sided, density, mean), the PSD only (N/2 + 1 values). Raw little-endian float64.
import numpy as np, scipy.signal as ss
rng = np.random.default_rng(99)
t = np.arange(10000) / 1000.0
x = 0.5 * rng.standard_normal(10000) + 1.5 * np.sin(2 * np.pi * 123.4 * t) + 0.3
x.astype('<f8').tofile('psd_x.bin')
for w, n in [('hann', 256), ('hann', 1000), ('hamming', 512), ('blackman', 128)]:
    f, p = ss.welch(x, fs=1000, window=w, nperseg=n)
    p.astype('<f8').tofile('welch_%s_%d.bin' % (w, n))
print('ok')
