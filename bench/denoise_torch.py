#!/usr/bin/env python3
# The comparison for bench/denoise_cuda_bench.cpp: the same db8 VisuShrink (pywt's deepest level,
# periodization, noise from the median |finest detail|, soft thresholds, inverse) as a PyTorch
# cascade: per level a strided conv1d on the periodically extended signal (both filters at once),
# the median by two kthvalue calls (numpy's median of an even count), thresholds by elementwise
# ops, per level a conv_transpose1d with the wrap folded back. float32, device-resident; CUDA-event
# time around one whole denoise after warm-up, median of REPS.
# Usage: denoise_torch.py FILTERS.json REPS [CHECK_IN.f32 CHECK_OUT.f32]: with the check files,
# also denoises CHECK_IN and writes the result (to compare with Vigil's).
import json, math, sys
import numpy as np
import torch
import torch.nn.functional as F

filters = json.load(open(sys.argv[1]))
reps = int(sys.argv[2])
dev = torch.device("cuda")
lo = torch.tensor(filters["dec_lo"], dtype=torch.float32, device=dev)
hi = torch.tensor(filters["dec_hi"], dtype=torch.float32, device=dev)
L = lo.numel()
s = L // 2
P = L - 1 - s  # left wrap; right wrap s - 1
W = torch.stack([lo.flip(0), hi.flip(0)]).unsqueeze(1)  # (2, 1, L)

def max_level(n):
    j = 0
    while (n >> (j + 1)) >= L - 1 and (n >> (j + 1)) > 0:
        j += 1
    return j

def analyse(a):  # (1, 1, m) -> cA, cD (1, 1, m/2): cA[i] = sum_k lo[k] a[(2i + s - k) mod m]
    parts = [a[..., a.shape[-1] - P:], a] + ([a[..., :s - 1]] if s > 1 else [])
    out = F.conv1d(torch.cat(parts, dim=-1), W, stride=2)
    return out[:, 0:1], out[:, 1:2]

def synthesise(ca, cd):  # the transpose, wrap folded back
    m = 2 * ca.shape[-1]
    y = F.conv_transpose1d(torch.cat([ca, cd], dim=1), W, stride=2)
    a = y[..., P:P + m].clone()
    if P:
        a[..., m - P:] += y[..., :P]
    if s > 1:
        a[..., :s - 1] += y[..., P + m:]
    return a

def denoise(x):
    n = x.shape[-1]
    a, details = x.view(1, 1, n), []
    for _ in range(max_level(n)):
        a, d = analyse(a)
        details.append(d)
    d1 = details[0].abs().flatten()
    h = d1.numel() // 2
    median = 0.5 * (d1.kthvalue(h).values + d1.kthvalue(h + 1).values)
    thr = (median / 0.6745) * math.sqrt(2.0 * math.log(n))
    details = [torch.sign(d) * torch.relu(d.abs() - thr) for d in details]
    for d in reversed(details):
        a = synthesise(a, d)
    return a.view(n)

if len(sys.argv) > 4:
    x = torch.from_numpy(np.fromfile(sys.argv[3], dtype=np.float32)).to(dev)
    denoise(x).cpu().numpy().astype(np.float32).tofile(sys.argv[4])
torch.manual_seed(1)
for log2n in range(16, 27, 2):
    n = 1 << log2n
    i = torch.arange(n, device=dev, dtype=torch.float64)
    x = (torch.sin(0.001 * i) + 0.2 * torch.randn(n, device=dev, dtype=torch.float64)).float()
    for _ in range(3):
        denoise(x)
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y = denoise(x)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    times.sort()
    print(json.dumps({"log2n": log2n, "median_s": times[len(times) // 2], "torch": torch.__version__}), flush=True)
