#!/usr/bin/python3
# Reference outputs for tests/dsp/dwt_test.cpp and denoise_test.cpp, beyond shared/reference's db8.
# Debian 12: python3-pywt 1.1.1, python3-numpy 1.24.2. Run from tests/data:
#   /usr/bin/python3 make_wavelet_reference.py
# Files are raw little-endian float64. x: wavelet_x.bin (2048 values, numpy default_rng(2026)
# standard normal plus a 37/2048-cycle sine of amplitude 3). For each wavelet W and level J below:
#   wavedec_W_J.bin   = np.concatenate(pywt.wavedec(x, W, mode='periodization', level=J))
#   denoise_W_J_MODE_NOISE.bin = VisuShrink as shared/reference/README.md describes, with MODE soft
#     or hard and NOISE 'finest' (sigma = median(|cD1|)/0.6745 for every level) or 'perlevel'
#     (sigma_j = median(|cD_j|)/0.6745 for level j); threshold sigma * sqrt(2 ln N), N = len(x).
import numpy as np, pywt

rng = np.random.default_rng(2026)
N = 2048
x = rng.standard_normal(N) + 3 * np.sin(2 * np.pi * 37 * np.arange(N) / N)
x.astype('<f8').tofile('wavelet_x.bin')
cases = [('haar', 5), ('db2', 6), ('db20', 4), ('sym5', 6), ('sym20', 3)]
for w, J in cases:
    c = pywt.wavedec(x, w, mode='periodization', level=J)
    np.concatenate(c).astype('<f8').tofile('wavedec_%s_%d.bin' % (w, J))
    for mode in ('soft', 'hard'):
        for noise in ('finest', 'perlevel'):
            den = [c[0]]
            for d in c[1:]:
                src = c[-1] if noise == 'finest' else d
                sigma = np.median(np.abs(src)) / 0.6745
                den.append(pywt.threshold(d, sigma * np.sqrt(2 * np.log(N)), mode=mode))
            y = pywt.waverec(den, w, mode='periodization')
            y.astype('<f8').tofile('denoise_%s_%d_%s_%s.bin' % (w, J, mode, noise))
print('ok')
