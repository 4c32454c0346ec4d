// CPU conversion; the reference the CUDA kernel is tested against.
#include "dsp/sample_convert.hpp"

#include <cmath>
#include <limits>

namespace vigil {
namespace {

template <typename T>
void convert_int(const T* in, uint32_t frames, uint32_t channels, float scale, float* out,
                 size_t stride, ConvertCounts* counts) noexcept {
  constexpr T kMin = std::numeric_limits<T>::min();
  constexpr T kMax = std::numeric_limits<T>::max();
  for (uint32_t c = 0; c < channels; ++c) {
    float* dst = out + c * stride;
    uint64_t clipped = 0;
    for (uint32_t f = 0; f < frames; ++f) {
      const T x = in[size_t(f) * channels + c];
      clipped += (x == kMin || x == kMax) ? 1u : 0u;
      dst[f] = static_cast<float>(x) * scale;
    }
    if (counts) counts[c].clipped += clipped;
  }
}

void convert_float(const float* in, uint32_t frames, uint32_t channels, float scale, float* out,
                   size_t stride, ConvertCounts* counts) noexcept {
  for (uint32_t c = 0; c < channels; ++c) {
    float* dst = out + c * stride;
    uint64_t clipped = 0, non_finite = 0;
    for (uint32_t f = 0; f < frames; ++f) {
      float x = in[size_t(f) * channels + c];
      if (!std::isfinite(x)) {
        ++non_finite;
        x = 0.0f;
      }
      clipped += std::fabs(x) >= 1.0f ? 1u : 0u;
      dst[f] = x * scale;
    }
    if (counts) {
      counts[c].clipped += clipped;
      counts[c].non_finite += non_finite;
    }
  }
}

}  // namespace

void convert_to_planar(const void* in, SampleFormat format, uint32_t frames, uint32_t channels,
                       float scale, float* out, size_t out_stride_frames,
                       ConvertCounts* counts) noexcept {
  switch (format) {
    case SampleFormat::kInt16:
      convert_int(static_cast<const int16_t*>(in), frames, channels, scale, out, out_stride_frames, counts);
      break;
    case SampleFormat::kInt32:
      convert_int(static_cast<const int32_t*>(in), frames, channels, scale, out, out_stride_frames, counts);
      break;
    case SampleFormat::kFloat32:
      convert_float(static_cast<const float*>(in), frames, channels, scale, out, out_stride_frames, counts);
      break;
  }
}

}  // namespace vigil
