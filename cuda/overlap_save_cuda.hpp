// OverlapSaveCuda: the CUDA twin of dsp/PartitionedFirBank's single-block layout: one FFT of size
// N per block of hop B = N - M + 1 new samples (M = the longest filter), all blocks a call
// completes batched through one forward and one inverse cuFFT call over blocks x channels (x bands
// for the inverse). Output equals lfilter(h, 1, x) delayed by B. For throughput where a latency
// of B is acceptable; FirBankCuda (uniform partitions) is the low-latency form.
// Host C++ only. Not yet: tap swap with crossfade, CUDA Graph capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace vigil::cuda {

class OverlapSaveCuda {
 public:
  // Below it the callback costs more than the pass it saves (H100, 16 ch x 2^20, one call:
  // 8 192 points 390 us fused against 276 us apart; 16 384 points 284 against 293; 32 768 points
  // 380 against 395: bench/fir_cuda_bench BM_OverlapSaveCuda*, 2026-12-06).
  static constexpr uint32_t kFuseFromFftSize = 16384;

  // band_taps: 1..256 bands of 1..2^20 taps; fft_size: a power of two > the longest filter,
  // 32..2^22; channels 1..4096; max_frames: the most frames one process() call gets (1..2^26).
  // fuse_multiply: where cuFFT takes LTO callbacks (CUDA 13) and the FFT has kFuseFromFftSize
  // points or more, the taps' spectra multiply each spectrum as the forward transform stores it
  // (fused_multiply() says whether it did); otherwise, or if planning with the callback fails, in
  // a pass of their own. The same products either way (to float rounding: test::kGpuVsCpuRelL2).
  // Throws std::invalid_argument or CudaError.
  OverlapSaveCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, uint32_t fft_size,
                  uint32_t max_frames, cudaStream_t stream = nullptr, bool fuse_multiply = true);
  ~OverlapSaveCuda();
  OverlapSaveCuda(const OverlapSaveCuda&) = delete;
  OverlapSaveCuda& operator=(const OverlapSaveCuda&) = delete;

  // As FirBankCuda::process; frames <= max_frames (larger calls return cudaErrorInvalidValue).
  cudaError_t process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out, size_t out_stride) noexcept;
  void reset();

  uint32_t latency_frames() const noexcept { return hop_; }
  uint32_t hop() const noexcept { return hop_; }
  uint32_t fft_size() const noexcept { return n_; }
  bool fused_multiply() const noexcept { return fused_multiply_; }

 private:
  void release() noexcept;
  // The forward plan with the multiply as its store callback; false (nothing kept) where cuFFT
  // cannot make it.
  bool plan_forward_with_multiply(int spectra);

  uint32_t bands_, channels_, n_, taps_len_, hop_, bins_, max_frames_, max_blocks_;
  size_t line_len_, ring_len_;
  cudaStream_t stream_;
  float* d_line_[2] = {nullptr, nullptr};
  int cur_ = 0;
  float* d_frames_ = nullptr;  // windows cut from the line, the forward FFT's input
  void* d_spec_ = nullptr;     // the forward transform's output (not with the fused multiply)
  void* d_prod_ = nullptr;
  void* d_taps_ = nullptr;
  void* d_multiply_info_ = nullptr;  // the store callback's OsMultiplyInfo
  bool fused_multiply_ = false;
  float* d_time_ = nullptr;
  float* d_ring_ = nullptr;
  int plan_forward_ = 0, plan_inverse_ = 0;
  uint32_t fill_ = 0;          // pending input samples after the history
  uint64_t blocks_done_ = 0;   // blocks filtered since reset
  uint64_t emitted_ = 0;       // output samples emitted since reset
};

}  // namespace vigil::cuda
