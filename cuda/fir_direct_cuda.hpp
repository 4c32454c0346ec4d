// FirDirectCuda: the CUDA twin of dsp/FirBank, the direct form for short filters: N band filters
// over C channels, device memory in and out, every output y_b[n] = sum_k h_b[k] x[n - k] with no
// delay (lfilter(h, 1, x)), the history (the longest filter's taps - 1 samples per channel) carried
// across calls on the device. The kernel (cuda/convolve_direct.cu, launch_fir_direct_bank) keeps
// the taps and a tile of inputs in shared memory and nine consecutive outputs per thread in
// registers over a sliding window of inputs. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace vigil::cuda {

class FirDirectCuda {
 public:
  // band_taps: 1..65535 bands of 1..kMaxTaps taps (lengths may differ); channels: 1..65535.
  // Device memory is allocated here. Throws std::invalid_argument or CudaError.
  static constexpr uint32_t kMaxTaps = 4096;
  FirDirectCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, cudaStream_t stream = nullptr);
  ~FirDirectCuda();
  FirDirectCuda(const FirDirectCuda&) = delete;
  FirDirectCuda& operator=(const FirDirectCuda&) = delete;

  // Enqueues on the stream. d_in: channel c at d_in + c * in_stride; d_out: band b, channel c at
  // d_out + (b * channels + c) * out_stride. frames >= 0. RT-safe: no allocation, no
  // synchronisation. Returns the first CUDA failure.
  cudaError_t process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out, size_t out_stride) noexcept;
  // New taps from the next call on, the same band count, none longer than the longest at
  // construction (the history holds no more); the history is kept (FirBank::set_taps with a
  // one-sample crossfade). Enqueued; returns cudaErrorInvalidValue for taps that do not fit.
  cudaError_t set_taps(const std::vector<std::vector<float>>& band_taps) noexcept;
  void reset();  // clears the history (enqueued). Throws CudaError.

  uint32_t bands() const noexcept { return bands_; }
  uint32_t channels() const noexcept { return channels_; }
  uint32_t taps() const noexcept { return m_; }  // the longest filter (the others zero-padded to it)
  static constexpr uint32_t latency_frames() noexcept { return 0; }

 private:
  uint32_t bands_, channels_, m_ = 0;
  cudaStream_t stream_;
  float* d_taps_ = nullptr;     // [bands][m]
  float* d_hist_[2] = {nullptr, nullptr};  // [channels][m - 1], the current one and the next
  unsigned current_ = 0;
  std::vector<float> h_taps_;   // staging for set_taps (sized at construction)
};

}  // namespace vigil::cuda
