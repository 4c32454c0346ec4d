// SampleConvertCuda: owns the device buffers for converting chunks on the GPU. Compiles with the
// host compiler. Thread: one owner thread at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "dsp/sample_convert.hpp"

namespace vigil::cuda {

class SampleConvertCuda {
 public:
  // max_frames: 1..2^26; channels: 1..1024. Allocates device memory; throws CudaError or
  // std::invalid_argument.
  SampleConvertCuda(uint32_t max_frames, uint32_t channels);
  ~SampleConvertCuda();
  SampleConvertCuda(const SampleConvertCuda&) = delete;
  SampleConvertCuda& operator=(const SampleConvertCuda&) = delete;

  // Host in, host out, synchronous (copies, kernel, copies back, waits): for tests, tools and
  // benchmarks. out: planar, channel c at out + c * out_stride_frames. counts: `channels`
  // entries, added to (may be null). Throws CudaError.
  void convert(const void* h_in, SampleFormat format, uint32_t frames, float scale, float* out,
               size_t out_stride_frames, ConvertCounts* counts, cudaStream_t stream = nullptr);

  // Device in, device out, asynchronous on `stream` (the pipeline path). Counts accumulate in
  // device memory until read_counts(). RT-safe: no allocation.
  cudaError_t enqueue(const void* d_in, SampleFormat format, uint32_t frames, float scale, float* d_out,
                      size_t out_stride_frames, cudaStream_t stream) noexcept;

  void* device_input() noexcept { return d_in_; }
  float* device_output() noexcept { return d_out_; }

 private:
  uint32_t max_frames_;
  uint32_t channels_;
  void* d_in_ = nullptr;
  float* d_out_ = nullptr;
  unsigned long long* d_counts_ = nullptr;
};

}  // namespace vigil::cuda
