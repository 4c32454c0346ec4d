// CUDA twin of dsp/sample_convert: interleaved int16/int32/float32 -> planar float32 with the
// same clip and non-finite accounting. POD parameters and the launcher; no framework types.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/sample_format.hpp"

namespace vigil::cuda {

struct ConvertParams {
  const void* d_in = nullptr;           // frames * channels interleaved samples of `format`
  SampleFormat format = SampleFormat::kInt16;
  uint32_t frames = 0;                  // 0..2^26
  uint32_t channels = 0;                // 1..kMaxChannels (core/stream_format.hpp)
  float scale = 1.0f;
  float* d_out = nullptr;               // channel c at d_out + c * out_stride_frames
  size_t out_stride_frames = 0;         // >= frames
  unsigned long long* d_counts = nullptr;  // 2 per channel: [c*2] clipped, [c*2+1] non-finite; added to
  // Instead of d_in: a device-visible cell (mapped host memory) the kernel reads the input's
  // address from when it runs, so that a captured graph can convert a different chunk each
  // replay. That address may be page-locked host memory (read across the bus: no copy first).
  const void* const* d_in_cell = nullptr;
};

// Enqueues the conversion on `stream`. Returns cudaErrorInvalidValue for parameters out of range
// and the launch error otherwise (cudaPeekAtLastError after the launch). Never synchronises
// unless VIGIL_CUDA_DEBUG_SYNC is defined.
cudaError_t launch_convert_to_planar(const ConvertParams& p, cudaStream_t stream);

}  // namespace vigil::cuda
