// How much an idle GPU costs the next chunk, and what pipeline.gpu_keep_warm (cuda::GpuKeepWarm)
// gives back: after a gap of G ms with the host spinning (as the pipeline thread does with
// busy_poll), a chunk's work is queued (a 256 KiB copy in, a 256 KiB memset on the device) and
// then its copy out, and the stream synchronised. Printed per gap: the time to queue the first two
// (p50, p90) and the whole round trip (p50, p90), without and with keep-warm rounds every 0.5 ms
// during the gap. Usage: build-gpu/bench/gpu_idle_bench
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/clock.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/gpu_keep_warm.hpp"
#include "cuda/pinned_buffer.hpp"

namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}

}  // namespace

int main() {
  using namespace vigil;
  std::string why;
  if (!cuda::device_available(&why)) {
    std::fprintf(stderr, "gpu_idle_bench: no usable CUDA device (%s)\n", why.c_str());
    return 1;
  }
  constexpr size_t kBytes = 256 << 10;
  cuda::DeviceBuffer device(kBytes);
  cuda::PinnedBuffer host(kBytes, false);
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto chunk = [&](double& enqueue_us, double& total_us) {
    const int64_t t0 = mono_now_ns();
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(device.get(), host.host(), kBytes, cudaMemcpyHostToDevice, stream));
    VIGIL_CUDA_CHECK(cudaMemsetAsync(device.get(), 1, kBytes, stream));
    const int64_t t1 = mono_now_ns();
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(host.host(), device.get(), kBytes, cudaMemcpyDeviceToHost, stream));
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
    const int64_t t2 = mono_now_ns();
    enqueue_us = double(t1 - t0) / 1e3;
    total_us = double(t2 - t0) / 1e3;
  };
  double e, t;
  for (int i = 0; i < 50; ++i) chunk(e, t);  // warm-up
  std::printf("| gap between chunks | keep-warm | queue copy in + memset p50 / p90 (us) | round trip p50 / p90 (us) |\n");
  std::printf("|---|---|---|---|\n");
  for (bool keep : {false, true}) {
    cuda::GpuKeepWarm warm;
    for (double gap_ms : {0.05, 2.0, 5.0, 20.0}) {
      std::vector<double> enqueue, total;
      const int runs = gap_ms >= 10 ? 60 : 150;
      for (int r = 0; r < runs; ++r) {
        const int64_t until = mono_now_ns() + int64_t(gap_ms * 1e6);
        for (int64_t now = mono_now_ns(); now < until; now = mono_now_ns())
          if (keep) warm.ping(now);
        chunk(e, t);
        enqueue.push_back(e);
        total.push_back(t);
      }
      std::printf("| %.2f ms | %s | %.1f / %.1f | %.1f / %.1f |\n", gap_ms, keep ? "on" : "off", quantile(enqueue, 0.5),
                  quantile(enqueue, 0.9), quantile(total, 0.5), quantile(total, 0.9));
    }
    if (keep) std::printf("\nkeep-warm rounds %llu, errors %llu\n", (unsigned long long)warm.rounds(),
                          (unsigned long long)warm.errors());
  }
  cudaStreamDestroy(stream);
  return 0;
}
