#!/usr/bin/env python3
# The peers a user would pick for a long FIR on the GPU, on the shapes of bench/fir_cuda_bench.cpp:
# 16 channels x 2^20 float32 samples, one filter of M taps, device-resident. CuPy's overlap-add
# (cupyx.scipy.signal.oaconvolve) and FFT convolution (fftconvolve), and PyTorch's conv1d (cuDNN
# picks its algorithm; TF32 off, so that all three compute in float32 as Vigil does) where PyTorch
# is installed. CUDA-event time after warm-up, median of REPS; each peer's output checked against
# oaconvolve's on the first channel. Prints one JSON object per M: every peer's median, the best.
import json, sys
import cupy as cp
import cupyx.scipy.signal as cs

try:
    import torch
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # cuDNN tries its algorithms once per shape (in the warm-up)
except ImportError:
    torch = None

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
x = cp.random.standard_normal((16, 1 << 20), dtype=cp.float32)


def timed(run, record, synchronize, elapsed_s):
    for _ in range(3):
        run()
    times = []
    for _ in range(reps):
        start = record()
        y = run()
        stop = record()
        synchronize(stop)
        times.append(elapsed_s(start, stop))
    times.sort()
    return times[len(times) // 2], y


def cupy_timed(run):
    def record():
        e = cp.cuda.Event()
        e.record()
        return e
    return timed(run, record, lambda e: e.synchronize(), lambda s, e: cp.cuda.get_elapsed_time(s, e) / 1e3)


def torch_timed(run):
    def record():
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        return e
    return timed(run, record, lambda e: e.synchronize(), lambda s, e: s.elapsed_time(e) / 1e3)


def rel_l2(a, b):
    return float(cp.linalg.norm(a - b) / cp.linalg.norm(b))


for m in (64, 256, 1024, 8192):
    h = cp.random.standard_normal((1, m), dtype=cp.float32)
    peers, checks = {}, {}
    peers["cupy oaconvolve"], ref = cupy_timed(lambda: cs.oaconvolve(x, h, mode='full', axes=1))
    peers["cupy fftconvolve"], y = cupy_timed(lambda: cs.fftconvolve(x, h, mode='full', axes=1))
    checks["cupy fftconvolve"] = rel_l2(y[0], ref[0])
    if torch is not None:
        xt = torch.as_tensor(x, device='cuda').reshape(16, 1, -1)
        wt = torch.as_tensor(h[:, ::-1].copy(), device='cuda').reshape(1, 1, m)  # conv1d correlates
        peers["torch conv1d"], y = torch_timed(lambda: torch.nn.functional.conv1d(xt, wt, padding=m - 1))
        checks["torch conv1d"] = rel_l2(cp.asarray(y.reshape(16, -1)[0]), ref[0])
    best = min(peers, key=peers.get)
    print(json.dumps({'m': m, 'median_s': peers[best], 'best': best, 'peers': peers, 'checks': checks,
                      'dtype': str(ref.dtype), 'cupy': cp.__version__,
                      'torch': torch.__version__ if torch is not None else None}), flush=True)
