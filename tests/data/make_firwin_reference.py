#!/usr/bin/python3
# scipy.signal.firwin references for tests/dsp/fir_design_test.cpp. Debian 12: python3-scipy 1.10.1.
# Run from tests/data: /usr/bin/python3 make_firwin_reference.py
# firwin_CASE.bin: raw little-endian float64 taps; the cases are listed in firwin_cases.txt as
#   CASE TYPE TAPS F1 F2 RATE WINDOW PARAM   (PARAM: kaiser beta, or 0)
import numpy as np, scipy.signal as ss
cases = [
    ('lp_hann', 'lowpass', 101, 3000, 0, 48000, 'hann', 0),
    ('hp_blackman', 'highpass', 129, 5000, 0, 51200, 'blackman', 0),
    ('bp_kaiser', 'bandpass', 255, 1000, 5000, 51200, 'kaiser', 8.6),
    ('bs_hamming', 'bandstop', 63, 200, 400, 2000, 'hamming', 0),
    ('lp_kaiser_atten80', 'lowpass', 201, 10000, 0, 96000, 'kaiser', ss.kaiser_beta(80.0)),
    ('bp_rect', 'bandpass', 64, 100, 300, 1000, 'boxcar', 0),
]
with open('firwin_cases.txt', 'w') as f:
    for name, typ, n, f1, f2, rate, win, beta in cases:
        window = ('kaiser', beta) if win == 'kaiser' else win
        cutoff = [f1, f2] if f2 else f1
        h = ss.firwin(n, cutoff, window=window, pass_zero=typ, fs=rate)
        h.astype('<f8').tofile('firwin_%s.bin' % name)
        f.write('%s %s %d %r %r %r %s %r\n' % (name, typ, n, f1, f2, rate, 'rectangular' if win == 'boxcar' else win, beta))
print(open('firwin_cases.txt').read())
