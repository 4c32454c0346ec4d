#!/usr/bin/env python3
# The comparison for bench/crossover_latency_bench.cpp: PyTorch conv1d on the same chunks, as a
# user would stream it: per 1024-frame stereo chunk, pinned host memory in -> GPU, the last 8190
# samples of history per channel prepended, one grouped conv1d (2 channels x 4 bands of 8191 taps),
# the 4 x 2 x 1024 outputs back to pinned host memory, synchronised; wall time per chunk after 200
# warm-up chunks; quantiles over CHUNKS. The taps are random (the cost does not depend on them).
import json, sys, time
import torch
import torch.nn.functional as F

chunks = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
dev = torch.device("cuda")
C, B, M, N = 2, 4, 8191, 1024
torch.backends.cudnn.benchmark = True
w = torch.randn(C * B, 1, M, device=dev) / M ** 0.5       # group c: bands of channel c
history = torch.zeros(1, C, M - 1, device=dev)
src = torch.randn(16, C, N).pin_memory()
out = torch.empty(1, C * B, N).pin_memory()
times = []
for k in range(-200, chunks):
    x_host = src[(k + 200) % 16]
    t0 = time.perf_counter()
    x = x_host.to(dev, non_blocking=True).unsqueeze(0)
    line = torch.cat([history, x], dim=2)
    y = F.conv1d(line, w, groups=C)          # (1, C*B, N): 'valid' over history + chunk
    history = line[:, :, -(M - 1):]
    out.copy_(y, non_blocking=True)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    if k >= 0:
        times.append((t1 - t0) * 1e6)
times.sort()
q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
print(json.dumps({"stage": "pytorch conv1d", "chunks": chunks, "p50_us": q(0.5), "p99_us": q(0.99),
                  "p999_us": q(0.999), "max_us": times[-1], "torch": torch.__version__}), flush=True)
