// FirDirectCuda: the CUDA twin of dsp/FirBank, the direct form: N band filters over C channels,
// device memory in and out, every output y_b[n] = sum_k h_b[k] x[n - k] with no delay
// (lfilter(h, 1, x)), the history (the longest filter's taps - 1 samples per channel) carried
// across calls on the device. Two kernels (cuda/convolve_direct.cu), chosen at construction so
// that every call sums the same products in the same order:
//   tiled (launch_fir_direct_bank): the taps and a tile of inputs in shared memory, nine
//     consecutive outputs per thread in registers over a sliding window of inputs; up to
//     kTiledMaxTaps taps. The history is carried into a second buffer and copied back.
//   split (launch_fir_direct_split): the taps cut into segments as well, one block per tile,
//     segment and lane, the segments' sums added in a fixed order by the block that finishes a
//     tile last; for longer filters, and for chunks too short to fill the GPU with tiles (S3's
//     256 frames x 8 lanes of 8191 taps: 152 blocks instead of 8). One launch per call: the
//     history is double-buffered and the kernel flips which buffer is current.
// Either way every call uses the same pointers, so a call can be captured as a CUDA graph and
// replayed. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/fir_filter_cuda.hpp"

namespace vigil::cuda {

class FirDirectCuda final : public FirFilterCuda {
 public:
  // band_taps: 1..65535 bands of 1..kMaxTaps taps (lengths may differ); channels: 1..65535.
  // max_frames: the most frames a call will usually carry (0: unknown, the tiled kernel up to
  // kTiledMaxTaps); with the GPU's SM count it picks the kernel (any call may carry more). Device memory is allocated here. Throws
  // std::invalid_argument or CudaError.
  static constexpr uint32_t kMaxTaps = 65536;
  static constexpr uint32_t kTiledMaxTaps = 4096;  // the tiled kernel's shared-memory bound
  // layout_channels: the channel count the kernel is chosen and the taps cut for (0: channels); a
  // part of a bank split by channels gives the whole bank's, so its sums are added in the same
  // order and its outputs are the whole bank's to the bit.
  FirDirectCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, cudaStream_t stream = nullptr,
                uint32_t max_frames = 0, uint32_t layout_channels = 0);
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
  bool split() const noexcept { return split_; }  // the split kernel (else the tiled one)
  uint32_t segment() const noexcept { return seg_; }  // the split kernel's taps per segment

 private:
  void free_device() noexcept;

  uint32_t bands_, channels_, m_ = 0;
  cudaStream_t stream_;
  float* d_taps_ = nullptr;     // [bands][m]
  float* d_hist_ = nullptr;  // [channels][m - 1]: the last m - 1 samples before the next call
  float* d_next_ = nullptr;  // the same after a call, copied back into d_hist_ (split: the other buffer)
  bool split_ = false;
  uint32_t seg_ = 0, segments_ = 0, tiles_cap_ = 0;  // the split kernel's segments; tiles a launch holds
  float* d_partial_ = nullptr;     // split: the segments' sums, tiles_cap_ tiles a lane
  unsigned* d_counters_ = nullptr;  // split: segments done per lane and tile, + blocks done
  int* d_parity_ = nullptr;         // split: 1 when d_next_ holds the current history
  std::vector<float> h_taps_;   // staging for set_taps (sized at construction)
};

}  // namespace vigil::cuda
