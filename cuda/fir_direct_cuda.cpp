#include "cuda/fir_direct_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/convolve_direct.cuh"
#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

static_assert(FirDirectCuda::kMaxTaps == kConvolveMaxTaps, "the kernel's shared-memory tile bounds the taps");

FirDirectCuda::FirDirectCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, cudaStream_t stream)
    : bands_(uint32_t(band_taps.size())), channels_(channels), stream_(stream) {
  if (band_taps.empty() || band_taps.size() > 65535)
    throw std::invalid_argument("FirDirectCuda: bands must be 1..65535, got " + std::to_string(band_taps.size()));
  if (channels < 1 || channels > 65535)
    throw std::invalid_argument("FirDirectCuda: channels must be 1..65535, got " + std::to_string(channels));
  for (size_t b = 0; b < band_taps.size(); ++b) {
    if (band_taps[b].empty() || band_taps[b].size() > kMaxTaps)
      throw std::invalid_argument("FirDirectCuda: band " + std::to_string(b) + " taps must be 1.." +
                                  std::to_string(kMaxTaps) + ", got " + std::to_string(band_taps[b].size()));
    m_ = std::max(m_, uint32_t(band_taps[b].size()));
  }
  h_taps_.assign(size_t(bands_) * m_, 0.0f);
  const size_t hist = size_t(channels_) * (m_ - 1);
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_taps_), h_taps_.size() * sizeof(float)));
    for (float** h : {&d_hist_, &d_next_})
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(h), std::max<size_t>(hist, 1) * sizeof(float)));
    VIGIL_CUDA_CHECK(set_taps(band_taps));
    reset();
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  } catch (...) {
    cudaFree(d_taps_);
    cudaFree(d_hist_);
    cudaFree(d_next_);
    throw;
  }
}

FirDirectCuda::~FirDirectCuda() {
  cudaFree(d_taps_);
  cudaFree(d_hist_);
  cudaFree(d_next_);
}

void FirDirectCuda::reset() {
  const size_t hist = size_t(channels_) * (m_ - 1);
  if (hist) VIGIL_CUDA_CHECK(cudaMemsetAsync(d_hist_, 0, hist * sizeof(float), stream_));
}

cudaError_t FirDirectCuda::set_taps(const std::vector<std::vector<float>>& band_taps) noexcept {
  if (band_taps.size() != bands_) return cudaErrorInvalidValue;
  for (const auto& t : band_taps)
    if (t.empty() || t.size() > m_) return cudaErrorInvalidValue;
  std::fill(h_taps_.begin(), h_taps_.end(), 0.0f);
  for (uint32_t b = 0; b < bands_; ++b) std::copy(band_taps[b].begin(), band_taps[b].end(), h_taps_.begin() + size_t(b) * m_);
  // From pageable memory: the copy returns once the taps are staged (a reload, not the real-time path).
  return cudaMemcpyAsync(d_taps_, h_taps_.data(), h_taps_.size() * sizeof(float), cudaMemcpyHostToDevice, stream_);
}

cudaError_t FirDirectCuda::process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out,
                                   size_t out_stride) noexcept {
  if (frames == 0) return cudaSuccess;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_direct_bank(d_in, in_stride, frames, channels_, d_hist_, d_taps_, m_, bands_,
                                                    d_out, out_stride, stream_));
  if (m_ == 1) return cudaSuccess;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_direct_carry(d_in, in_stride, frames, channels_, d_hist_, m_, d_next_, stream_));
  return cudaMemcpyAsync(d_hist_, d_next_, size_t(channels_) * (m_ - 1) * sizeof(float), cudaMemcpyDeviceToDevice,
                         stream_);
}

}  // namespace vigil::cuda
