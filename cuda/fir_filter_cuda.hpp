// FirFilterCuda: what the fir_bank stage's CUDA path needs of a GPU filter bank, whichever form it
// is (cuda/FirBankCuda, uniformly partitioned overlap-save; cuda/FirDirectCuda, the direct form).
// N band filters over C channels, device memory in and out, work enqueued on one stream, state
// kept on the device between calls. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace vigil::cuda {

class FirFilterCuda {
 public:
  virtual ~FirFilterCuda() = default;
  // d_in: channel c at d_in + c * in_stride; d_out: band b, channel c at
  // d_out + (b * channels + c) * out_stride. Any frames count. RT-safe: enqueues only.
  virtual cudaError_t process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out,
                              size_t out_stride) noexcept = 0;
  // Clears the state (enqueued). Throws CudaError.
  virtual void reset() = 0;
  // Later calls enqueue on `stream`; the caller orders the work across streams.
  virtual cudaError_t set_stream(cudaStream_t stream) noexcept = 0;
  // New taps of the same shape as at construction; the state is kept (enqueued, nothing allocated).
  virtual cudaError_t set_taps(const std::vector<std::vector<float>>& band_taps) noexcept = 0;
  // Frames of the current block received so far: a call from fill() == 0 that leaves it 0 can be
  // captured once as a CUDA graph and replayed (every launch uses the same pointers).
  virtual uint32_t fill() const noexcept = 0;
  // Output lags lfilter(h, 1, x) by this many frames.
  virtual uint32_t latency_frames() const noexcept = 0;
  virtual uint32_t bands() const noexcept = 0;
  virtual uint32_t channels() const noexcept = 0;
};

}  // namespace vigil::cuda
