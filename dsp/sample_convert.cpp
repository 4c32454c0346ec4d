// CPU conversion; the reference the CUDA kernel is tested against.
#include "dsp/sample_convert.hpp"

#include <cmath>
#include <limits>

namespace vigil {
namespace {

// Frames per tile: the de-interleaving reads each channel with a stride of `channels` samples, so
// the chunk goes through in tiles of about 8 KiB that stay in L1 while every channel takes its
// samples out (channel by channel over the whole chunk, each pass read all of it again from L2:
// 1.2 ns a sample at 64 channels).
template <typename T>
uint32_t tile_frames(uint32_t channels) noexcept {
  const size_t t = 8192 / (size_t(channels) * sizeof(T));
  return uint32_t(t < 16 ? 16 : t);
}

template <typename T>
void convert_int(const T* in, uint32_t frames, uint32_t channels, float scale, float* out,
                 size_t stride, ConvertCounts* counts) noexcept {
  constexpr T kMin = std::numeric_limits<T>::min();
  constexpr T kMax = std::numeric_limits<T>::max();
  const uint32_t tile = tile_frames<T>(channels);
  for (uint32_t f0 = 0; f0 < frames; f0 += tile) {
    const uint32_t f1 = frames - f0 < tile ? frames : f0 + tile;
    for (uint32_t c = 0; c < channels; ++c) {
      float* dst = out + c * stride;
      uint64_t clipped = 0;
      for (uint32_t f = f0; f < f1; ++f) {
        const T x = in[size_t(f) * channels + c];
        clipped += (x == kMin || x == kMax) ? 1u : 0u;
        dst[f] = static_cast<float>(x) * scale;
      }
      if (counts) counts[c].clipped += clipped;
    }
  }
}

void convert_float(const float* in, uint32_t frames, uint32_t channels, float scale, float* out,
                   size_t stride, ConvertCounts* counts) noexcept {
  const uint32_t tile = tile_frames<float>(channels);
  for (uint32_t f0 = 0; f0 < frames; f0 += tile) {
    const uint32_t f1 = frames - f0 < tile ? frames : f0 + tile;
    for (uint32_t c = 0; c < channels; ++c) {
      float* dst = out + c * stride;
      uint64_t clipped = 0, non_finite = 0;
      for (uint32_t f = f0; f < f1; ++f) {
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
