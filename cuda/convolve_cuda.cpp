#include "cuda/convolve_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/convolve_direct.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/overlap_save_cuda.hpp"
#include "dsp/partitioned_fir_bank.hpp"

namespace vigil::cuda {

namespace {
// Up to here the tiled direct kernel beats FFT overlap-save at every size measured on the H100
// but one: 512 taps x 10^6 samples, where FFT is 8 % faster (bench/results/LOG.md §7).
constexpr size_t kDirectMaxTaps = 512;
}  // namespace

void convolve_full_cuda(const float* x, size_t n, const float* h, size_t m, float* y) {
  if (n < 1 || m < 1)
    throw std::invalid_argument("convolve_full_cuda: both inputs need at least 1 sample, got " + std::to_string(n) +
                                " and " + std::to_string(m));
  if (m > n) {
    std::swap(x, h);
    std::swap(n, m);
  }
  if (m > (size_t(1) << 20)) throw std::invalid_argument("convolve_full_cuda: the shorter input may have at most 1048576 samples");
  std::string why;
  if (!device_available(&why)) throw CudaError(cudaErrorNoDevice, "no usable CUDA device: " + why);
  if (m <= kDirectMaxTaps && n <= (size_t(1) << 28)) {  // the tiled direct kernel, in one launch
    const size_t n_out = n + m - 1;
    float *d_x = nullptr, *d_h = nullptr, *d_y = nullptr;
    try {
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), n * sizeof(float)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_h), m * sizeof(float)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_y), n_out * sizeof(float)));
      VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice));
      VIGIL_CUDA_CHECK(cudaMemcpy(d_h, h, m * sizeof(float), cudaMemcpyHostToDevice));
      VIGIL_CUDA_CHECK(launch_convolve_full_tiled(d_x, n, d_h, uint32_t(m), d_y, nullptr));
      VIGIL_CUDA_CHECK(cudaMemcpy(y, d_y, n_out * sizeof(float), cudaMemcpyDeviceToHost));
    } catch (...) {
      cudaFree(d_x);
      cudaFree(d_h);
      cudaFree(d_y);
      throw;
    }
    cudaFree(d_x);
    cudaFree(d_h);
    cudaFree(d_y);
    return;
  }
  const uint32_t fft = std::max<uint32_t>(32, PartitionedFirBank::best_fft_size(m));
  constexpr uint32_t kChunk = 1u << 20;
  // One plan a call, host memory each side: the multiply stays a pass of its own here, as the
  // fused plan's callback is linked (JIT) each time a plan is made.
  OverlapSaveCuda os({std::vector<float>(h, h + m)}, 1, fft, kChunk, nullptr, false);
  const size_t latency = os.latency_frames(), total_out = n + m - 1, total_in = total_out + latency;
  float *d_in = nullptr, *d_out = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), kChunk * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), kChunk * sizeof(float)));
  std::vector<float> in(kChunk), out(kChunk);
  try {
    for (size_t at = 0; at < total_in; at += kChunk) {
      const auto k = uint32_t(std::min<size_t>(kChunk, total_in - at));
      for (uint32_t i = 0; i < k; ++i) in[i] = at + i < n ? x[at + i] : 0.0f;  // x, then zeros to flush
      VIGIL_CUDA_CHECK(cudaMemcpy(d_in, in.data(), k * sizeof(float), cudaMemcpyHostToDevice));
      VIGIL_CUDA_CHECK(os.process(d_in, kChunk, k, d_out, kChunk));
      VIGIL_CUDA_CHECK(cudaMemcpy(out.data(), d_out, k * sizeof(float), cudaMemcpyDeviceToHost));
      for (uint32_t i = 0; i < k; ++i)
        if (at + i >= latency) y[at + i - latency] = out[i];
    }
  } catch (...) {
    cudaFree(d_in);
    cudaFree(d_out);
    throw;
  }
  cudaFree(d_in);
  cudaFree(d_out);
}

}  // namespace vigil::cuda
