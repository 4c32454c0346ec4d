// CPU conversion; the reference the CUDA kernel is tested against.
#include "dsp/sample_convert.hpp"

#include "dsp/simd.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace vigil {
namespace {

using simd::v4f;
using simd::v4i;

// Frames per tile: the de-interleaving reads each channel with a stride of `channels` samples, so
// the chunk goes through in tiles of about 8 KiB that stay in L1 while every channel takes its
// samples out (channel by channel over the whole chunk, each pass read all of it again from L2:
// 1.2 ns a sample at 64 channels). A multiple of 4 frames: the vector paths take 4 at a time.
template <typename T>
uint32_t tile_frames(uint32_t channels) noexcept {
  const size_t t = 8192 / (size_t(channels) * sizeof(T)) / 4 * 4;
  return uint32_t(t < 16 ? 16 : t);
}

// One sample type's scalar rule and its four-lane twin, which must give the same floats and
// counts. int: clipped at full scale (see IntRule); float: NaN/Inf become 0 and count as non-finite,
// clipped at |x| >= 1. Counts are per lane: -1 where a lane's sample counts (vector compares).
template <typename T>
struct Rule;

template <typename T>
struct IntRule {
  // int32 carries 24-bit samples left-justified (ALSA S24_3LE, 24-bit WAV): their full scale is
  // 0x7FFFFF00 and INT32_MIN, so an int32 sample clips when its top 24 bits are at full scale.
  static constexpr T kMin = sizeof(T) == 4 ? T(std::numeric_limits<T>::min() + 0xFF) : std::numeric_limits<T>::min();
  static constexpr T kMax = sizeof(T) == 4 ? T(std::numeric_limits<T>::max() - 0xFF) : std::numeric_limits<T>::max();
  static float scalar(T x, uint64_t& clipped, uint64_t&) noexcept {
    clipped += (x <= kMin || x >= kMax) ? 1u : 0u;
    return static_cast<float>(x);
  }
  // Four samples at p (contiguous).
  static v4f vector(const T* p, v4i& clipped, v4i&) noexcept {
    v4i i;
    if constexpr (sizeof(T) == 2) {
      typedef T v4t __attribute__((vector_size(4 * sizeof(T))));
      v4t s;
      std::memcpy(&s, p, sizeof s);
      i = __builtin_convertvector(s, v4i);
    } else {
      std::memcpy(&i, p, sizeof i);
    }
    clipped -= (i <= int32_t(kMin)) | (i >= int32_t(kMax));  // a compare gives -1 where true
    return __builtin_convertvector(i, v4f);
  }
};

template <>
struct Rule<int16_t> : IntRule<int16_t> {};
template <>
struct Rule<int32_t> : IntRule<int32_t> {};

template <>
struct Rule<float> {
  static float scalar(float x, uint64_t& clipped, uint64_t& non_finite) noexcept {
    if (!std::isfinite(x)) {
      ++non_finite;
      x = 0.0f;
    }
    clipped += std::fabs(x) >= 1.0f ? 1u : 0u;
    return x;
  }
  static v4f vector(const float* p, v4i& clipped, v4i& non_finite) noexcept {
    v4f x;
    std::memcpy(&x, p, sizeof x);
    const v4i finite = (x - x) == 0.0f;  // x - x is NaN for NaN and +-Inf
    non_finite += finite + 1;            // 0 where finite, 1 where not
    x = v4f(v4i(x) & finite);            // non-finite -> +0
    const v4f magnitude = v4f(v4i(x) & 0x7fffffff);
    clipped -= magnitude >= 1.0f;
    return x;
  }
};

// Channels [c0, c1) of frames [f0, f1), one at a time.
template <typename T>
void convert_scalar(const T* in, uint32_t f0, uint32_t f1, uint32_t c0, uint32_t c1, uint32_t channels, float scale,
                    float* out, size_t stride, ConvertCounts* counts) noexcept {
  for (uint32_t c = c0; c < c1; ++c) {
    float* dst = out + c * stride;
    uint64_t clipped = 0, non_finite = 0;
    for (uint32_t f = f0; f < f1; ++f) dst[f] = Rule<T>::scalar(in[size_t(f) * channels + c], clipped, non_finite) * scale;
    if (counts) {
      counts[c].clipped += clipped;
      counts[c].non_finite += non_finite;
    }
  }
}

// Four channels [c, c + 4) of frames [f0, f0 + n), n a multiple of 4: four frames' rows of four
// channels, transposed into four channels' runs of four frames. Lane j of the counts is channel c + j.
template <typename T>
void convert_group(const T* in, uint32_t f0, uint32_t n, uint32_t c, uint32_t channels, float scale, float* out,
                   size_t stride, ConvertCounts* counts) noexcept {
  v4i clipped{}, non_finite{};
  float* d0 = out + c * stride;
  float* d1 = d0 + stride;
  float* d2 = d1 + stride;
  float* d3 = d2 + stride;
  for (uint32_t f = f0; f < f0 + n; f += 4) {
    const T* row = in + size_t(f) * channels + c;
    v4f r0 = Rule<T>::vector(row, clipped, non_finite);
    v4f r1 = Rule<T>::vector(row + channels, clipped, non_finite);
    v4f r2 = Rule<T>::vector(row + 2 * channels, clipped, non_finite);
    v4f r3 = Rule<T>::vector(row + 3 * channels, clipped, non_finite);
    simd::transpose4(r0, r1, r2, r3);
    simd::store4(d0 + f, r0 * scale);
    simd::store4(d1 + f, r1 * scale);
    simd::store4(d2 + f, r2 * scale);
    simd::store4(d3 + f, r3 * scale);
  }
  if (!counts) return;
  for (int j = 0; j < 4; ++j) {
    counts[c + j].clipped += uint32_t(clipped[j]);
    counts[c + j].non_finite += uint32_t(non_finite[j]);
  }
}

// Exactly two channels, frames [f0, f0 + n), n a multiple of 4: eight contiguous samples a step,
// lanes (c0 c1 c0 c1) split into the two channels.
template <typename T>
void convert_pair(const T* in, uint32_t f0, uint32_t n, float scale, float* out, size_t stride,
                  ConvertCounts* counts) noexcept {
  v4i clipped{}, non_finite{};
  for (uint32_t f = f0; f < f0 + n; f += 4) {
    const v4f a = Rule<T>::vector(in + 2 * size_t(f), clipped, non_finite);
    const v4f b = Rule<T>::vector(in + 2 * size_t(f) + 4, clipped, non_finite);
    simd::store4(out + f, simd::shuffle<0, 2, 4, 6>(a, b) * scale);
    simd::store4(out + stride + f, simd::shuffle<1, 3, 5, 7>(a, b) * scale);
  }
  if (!counts) return;
  for (int c = 0; c < 2; ++c) {
    counts[c].clipped += uint32_t(clipped[c]) + uint32_t(clipped[c + 2]);
    counts[c].non_finite += uint32_t(non_finite[c]) + uint32_t(non_finite[c + 2]);
  }
}

// One channel, frames [f0, f0 + n), n a multiple of 4.
template <typename T>
void convert_mono(const T* in, uint32_t f0, uint32_t n, float scale, float* out, ConvertCounts* counts) noexcept {
  v4i clipped{}, non_finite{};
  for (uint32_t f = f0; f < f0 + n; f += 4) simd::store4(out + f, Rule<T>::vector(in + f, clipped, non_finite) * scale);
  if (!counts) return;
  for (int j = 0; j < 4; ++j) {
    counts[0].clipped += uint32_t(clipped[j]);
    counts[0].non_finite += uint32_t(non_finite[j]);
  }
}

// Tile by tile: the whole frames of four with vectors (groups of four channels, or the one- and
// two-channel shapes), the rest (a tile's last 1-3 frames, the last 1-3 channels) one at a time.
// A tile's per-lane counts stay below 2^31 (a tile is at most 4096 frames).
template <typename T>
void convert(const T* in, uint32_t frames, uint32_t channels, float scale, float* out, size_t stride,
             ConvertCounts* counts) noexcept {
  const uint32_t tile = tile_frames<T>(channels);
  const uint32_t grouped = channels >= 4 ? channels / 4 * 4 : 0;
  for (uint32_t f0 = 0; f0 < frames; f0 += tile) {
    const uint32_t f1 = frames - f0 < tile ? frames : f0 + tile;
    const uint32_t n = (f1 - f0) / 4 * 4;
    uint32_t done = 0;  // channels converted for [f0, f0 + n)
    if (channels == 1) {
      convert_mono(in, f0, n, scale, out, counts);
      done = 1;
    } else if (channels == 2) {
      convert_pair(in, f0, n, scale, out, stride, counts);
      done = 2;
    } else {
      for (uint32_t c = 0; c < grouped; c += 4) convert_group(in, f0, n, c, channels, scale, out, stride, counts);
      done = grouped;
    }
    convert_scalar(in, f0, f0 + n, done, channels, channels, scale, out, stride, counts);
    convert_scalar(in, f0 + n, f1, 0, channels, channels, scale, out, stride, counts);
  }
}

}  // namespace

void convert_to_planar(const void* in, SampleFormat format, uint32_t frames, uint32_t channels,
                       float scale, float* out, size_t out_stride_frames,
                       ConvertCounts* counts) noexcept {
  switch (format) {
    case SampleFormat::kInt16:
      convert(static_cast<const int16_t*>(in), frames, channels, scale, out, out_stride_frames, counts);
      break;
    case SampleFormat::kInt32:
      convert(static_cast<const int32_t*>(in), frames, channels, scale, out, out_stride_frames, counts);
      break;
    case SampleFormat::kFloat32:
      convert(static_cast<const float*>(in), frames, channels, scale, out, out_stride_frames, counts);
      break;
  }
}

}  // namespace vigil
