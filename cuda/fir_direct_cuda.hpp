// FirDirectCuda: the CUDA twin of dsp/FirBank, the direct form for short filters: N band filters
// over C channels, device memory in and out, every output y_b[n] = sum_k h_b[k] x[n - k] with no
// delay (lfilter(h, 1, x)), the history (the longest filter's taps - 1 samples per channel) carried
// across calls on the device. The kernel (cuda/convolve_direct.cu, launch_fir_direct_bank) keeps
// the taps and a tile of inputs in shared memory and nine consecutive outputs per thread in
// registers over a sliding window of inputs. The history is carried into a second buffer and
// copied back on the device, so every call uses the same pointers: a call can be captured as a
// CUDA graph and replayed. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/fir_filter_cuda.hpp"

namespace vigil::cuda {

class FirDirectCuda final : public FirFilterCuda {
 public:
  // band_taps: 1..65535 bands of 1..kMaxTaps taps (lengths may differ); channels: 1..65535.
  // Device memory is allocated here. Throws std::invalid_argument or CudaError.
  static constexpr uint32_t kMaxTaps = 4096;
  FirDirectCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, cudaStream_t stream = nullptr);
  ~FirDirectCuda() override;
  FirDirectCuda(const FirDirectCuda&) = delete;
  FirDirectCuda& operator=(const FirDirectCuda&) = delete;

  // Enqueues on the stream. d_in: channel c at d_in + c * in_stride; d_out: band b, channel c at
  // d_out + (b * channels + c) * out_stride. frames >= 0. RT-safe: no allocation, no
  // synchronisation. Returns the first CUDA failure.
  cudaError_t process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out, size_t out_stride) noexcept override;
  // New taps from the next call on, the same band count, none longer than the longest at
  // construction (the history holds no more); the history is kept (FirBank::set_taps with a
  // one-sample crossfade). Enqueued; returns cudaErrorInvalidValue for taps that do not fit.
  cudaError_t set_taps(const std::vector<std::vector<float>>& band_taps) noexcept override;
  void reset() override;  // clears the history (enqueued). Throws CudaError.
  cudaError_t set_stream(cudaStream_t stream) noexcept override {
    stream_ = stream;
    return cudaSuccess;
  }

  uint32_t bands() const noexcept override { return bands_; }
  uint32_t channels() const noexcept override { return channels_; }
  uint32_t taps() const noexcept { return m_; }  // the longest filter (the others zero-padded to it)
  uint32_t latency_frames() const noexcept override { return 0; }
  uint32_t fill() const noexcept override { return 0; }  // no blocks: any call can be replayed

 private:
  uint32_t bands_, channels_, m_ = 0;
  cudaStream_t stream_;
  float* d_taps_ = nullptr;     // [bands][m]
  float* d_hist_ = nullptr;  // [channels][m - 1]: the last m - 1 samples before the next call
  float* d_next_ = nullptr;  // the same after a call, copied back into d_hist_
  std::vector<float> h_taps_;   // staging for set_taps (sized at construction)
};

}  // namespace vigil::cuda
