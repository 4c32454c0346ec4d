// Interleaved integer/float samples -> planar float32, with clip and non-finite accounting.
// Plain math, no threads; the CUDA twin is cuda/sample_convert.cuh. RT-safe: no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/sample_format.hpp"

namespace vigil {

// Per-channel counts from one conversion. Added to, never reset, by convert_to_planar.
struct ConvertCounts {
  uint64_t clipped = 0;     // samples at the format's full scale (int) or |x| >= 1 (float)
  uint64_t non_finite = 0;  // NaN or Inf (float input only); replaced with 0 in the output
};

// A sample counts as clipped when it sits at full scale:
//   int16: -32768 or 32767; int32: the top 24 bits at -2^23 or 2^23-1 (x <= INT32_MIN + 255 or
//   x >= INT32_MAX - 255: 24-bit samples arrive left-justified, their positive full scale is
//   0x7FFFFF00); float32: |x| >= 1.0 (before scaling).
// Non-finite float samples are written as 0.0f and counted, so they never reach filter state.
//
// in:         frames * channels interleaved samples of `format` (frame-major).
// frames:     0..any; channels: 1..65535.
// scale:      multiplies every sample ((float)x * scale), e.g. full_scale_factor(format).
// out:        planar, channel c at out + c * out_stride_frames; out_stride_frames >= frames.
// counts:     array of `channels` entries, incremented; may be null.
// RT-safe: yes.
void convert_to_planar(const void* in, SampleFormat format, uint32_t frames, uint32_t channels,
                       float scale, float* out, size_t out_stride_frames,
                       ConvertCounts* counts) noexcept;

}  // namespace vigil
