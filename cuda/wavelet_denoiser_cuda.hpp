// WaveletDenoiserCuda: the CUDA twin of dsp/WaveletDenoiser (VisuShrink on one block of n
// samples, as pywt wavedec -> threshold -> waverec, mode periodization), device-resident: the
// DWT level by level (lengths up to 4096 fused in one block, in shared memory), the median
// |detail| by exact radix selection on the device, the threshold computed there, soft or hard
// thresholding, the inverse DWT. Nothing crosses to the host. Thread: one caller at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/wavelet.cuh"
#include "dsp/wavelet_denoiser.hpp"

namespace vigil::cuda {

class WaveletDenoiserCuda {
 public:
  // As WaveletDenoiser: n 2..2^28 divisible by 2^levels (levels 0: pywt's deepest). Wavelets up
  // to 40 taps (all of Vigil's). Throws std::invalid_argument or CudaError.
  WaveletDenoiserCuda(const DenoiseSpec& spec, size_t n, cudaStream_t stream = nullptr);
  ~WaveletDenoiserCuda();
  WaveletDenoiserCuda(const WaveletDenoiserCuda&) = delete;
  WaveletDenoiserCuda& operator=(const WaveletDenoiserCuda&) = delete;

  // d_y = denoise(d_x), n samples each (may be the same array). Asynchronous on the stream.
  cudaError_t process(const float* d_x, float* d_y) noexcept;
  // The DWT alone (pywt.wavedec order) and its inverse; d_coeffs is not modified by inverse().
  cudaError_t forward(const float* d_x, float* d_coeffs) noexcept;
  cudaError_t inverse(const float* d_coeffs, float* d_x) noexcept;

  size_t size() const noexcept { return n_; }
  unsigned levels() const noexcept { return levels_; }
  // The thresholds of the last process() per level (1 = finest first). Synchronises the stream.
  std::vector<float> last_thresholds() const;

 private:
  cudaError_t estimate_thresholds() noexcept;  // from coeffs_ into d_thr_
  cudaError_t median_threshold(const float* d_v, size_t count, float* d_thr, unsigned thr_count) noexcept;
  void release() noexcept;

  DenoiseSpec spec_;
  uint32_t n_;
  unsigned levels_;
  WaveletFilters filters_{};
  cudaStream_t stream_;
  float* d_coeffs_ = nullptr;
  float* d_work_a_ = nullptr;  // approximations of odd levels (n/2)
  float* d_work_b_ = nullptr;  // and of even levels (n/4)
  float* d_thr_ = nullptr;
  SelectState* d_select_ = nullptr;
  uint32_t* d_hist_ = nullptr;
};

// Host memory in and out (vigil-dsp --backend cuda): y = denoise(x), or the DWT (spec.wavelet and
// spec.levels) forward or inverse; n samples. Throws std::invalid_argument or CudaError.
enum class WaveletOp { kDenoise, kForward, kInverse };
std::vector<float> wavelet_cuda(WaveletOp op, const DenoiseSpec& spec, const float* x, size_t n);

}  // namespace vigil::cuda
