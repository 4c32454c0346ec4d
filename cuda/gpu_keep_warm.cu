#include "cuda/gpu_keep_warm.hpp"

namespace vigil::cuda {
namespace {

__global__ void count_round_kernel(uint32_t* count) { *count += 1; }

}  // namespace

GpuKeepWarm::GpuKeepWarm(int64_t interval_ns)
    : interval_ns_(interval_ns), device_(2 * sizeof(uint32_t)), host_(2 * sizeof(uint32_t), false) {
  VIGIL_CUDA_CHECK(cudaMemset(device_.get(), 0, device_.bytes()));
  host_.host<uint32_t>()[0] = host_.host<uint32_t>()[1] = 0;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

GpuKeepWarm::~GpuKeepWarm() {
  if (!stream_) return;
  cudaStreamSynchronize(stream_);
  cudaStreamDestroy(stream_);
}

bool GpuKeepWarm::ping(int64_t now_ns) noexcept {
  if (errors()) return false;
  if (rounds() && now_ns - last_ns_ < interval_ns_) return true;
  cudaError_t e = cudaStreamQuery(stream_);
  if (e == cudaErrorNotReady) return true;  // the last round still runs: no second one behind it
  auto* count = device_.get<uint32_t>();
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(count + 1, host_.host<uint32_t>() + 1, sizeof(uint32_t), cudaMemcpyHostToDevice, stream_);
  if (e == cudaSuccess) {
    count_round_kernel<<<1, 1, 0, stream_>>>(count);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpyAsync(host_.host(), count, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_);
  if (e != cudaSuccess) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  last_ns_ = now_ns;
  rounds_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace vigil::cuda
