// StreamingDenoiserCuda: the CUDA twin of dsp/StreamingDenoiser — VisuShrink wavelet denoising
// on overlapped windows of N samples (hop N/2, weights sin²(π(n + ½)/N) that sum to one),
// overlap-added, the output delayed by exactly N — for many lanes, device memory in and out.
// Every window that completes in a call is denoised in one launch (a block per window and lane:
// the whole DWT, the median |detail| by an in-block radix select, the threshold, the inverse, in shared
// memory), then one launch emits the chunk's output and one carries the state to the next call.
// Windows of 4 … 4096 samples. Thread: one caller at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/streaming_denoise.cuh"
#include "dsp/wavelet_denoiser.hpp"

namespace vigil::cuda {

class StreamingDenoiserCuda {
 public:
  // window: a power of two 4..4096 with at least one level for the wavelet; lanes 1..4096;
  // max_frames: the most frames a call gets. Throws std::invalid_argument or CudaError.
  StreamingDenoiserCuda(const DenoiseSpec& spec, size_t window, uint32_t lanes, uint32_t max_frames,
                        cudaStream_t stream = nullptr);
  ~StreamingDenoiserCuda();
  StreamingDenoiserCuda(const StreamingDenoiserCuda&) = delete;
  StreamingDenoiserCuda& operator=(const StreamingDenoiserCuda&) = delete;

  // d_in: lane l at d_in + l * in_stride; d_out likewise (may not overlap the input). Any frames
  // count up to max_frames. Enqueued on the stream; no allocation, no synchronisation.
  cudaError_t process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out, size_t out_stride) noexcept;
  void reset();  // enqueued; throws CudaError

  uint32_t latency_frames() const noexcept { return window_; }
  unsigned levels() const noexcept { return params_.levels; }
  uint32_t lanes() const noexcept { return lanes_; }

 private:
  void release() noexcept;

  uint32_t window_, hop_, lanes_, max_frames_, max_windows_;
  cudaStream_t stream_;
  DenoiseWindowsParams params_{};
  float* d_weight_ = nullptr;
  float* d_hist_[2] = {nullptr, nullptr};
  int cur_ = 0;  // which hist holds the samples before the next call
  float* d_ready_ = nullptr;
  float* d_pending_ = nullptr;
  float* d_wout_ = nullptr;
  uint32_t fill_ = 0;  // frames of the current hop received
};

}  // namespace vigil::cuda
