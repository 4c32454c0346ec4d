#include "dsp/sample_convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace vigil {
namespace {

constexpr float kPoison = -12345.0f;

// Channel counts from 1 to 200 and frame counts that are and are not whole tiles of the
// de-interleaving (about 8 KiB of input a tile) or whole steps of its vectors (4 frames): the
// vector paths (groups of 4 channels, stereo, mono) and the scalar rest (the last 1-3 channels and
// frames) must give the same floats and counts as the rule written out below.
class SampleConvertShapes : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

// Random integers of T with full-scale codes in channel 0 and the last channel (clipped), and at
// a frame that is not a multiple of 4; then every output and count against the rule.
template <typename T>
void check_int(uint32_t channels, uint32_t frames, SampleFormat format, float scale) {
  std::mt19937 rng(11 + channels + frames);
  std::uniform_int_distribution<int64_t> dist(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> in(size_t(frames) * channels);
  for (auto& v : in) v = T(dist(rng));
  const uint32_t last = channels - 1;
  in[5 * channels] = std::numeric_limits<T>::max();
  in[6 * channels + last] = std::numeric_limits<T>::min();
  in[7 * channels + last] = std::numeric_limits<T>::max();
  if (sizeof(T) == 4 && frames > 11) {  // 24-bit samples widened left-justified: full scale, and one code below it
    in[9 * channels] = T(0x7FFFFF00);
    in[10 * channels + last] = T(0x7FFFFE00);
    in[11 * channels + last] = T(-0x7FFFFF00);  // one code above -2^23: not full scale
  }
  const size_t stride = frames + 5;
  std::vector<float> out(stride * channels, kPoison);
  std::vector<ConvertCounts> counts(channels);
  convert_to_planar(in.data(), format, frames, channels, scale, out.data(), stride, counts.data());

  std::vector<uint64_t> clips(channels, 0);
  for (uint32_t f = 0; f < frames; ++f)
    for (uint32_t c = 0; c < channels; ++c) {
      const T x = in[size_t(f) * channels + c];
      ASSERT_EQ(out[c * stride + f], float(x) * scale) << "frame " << f << " channel " << c;
      if constexpr (sizeof(T) == 4)  // the top 24 bits at a 24-bit full-scale code
        clips[c] += (x >> 8) == 0x7FFFFF || (x >> 8) == -0x800000;
      else
        clips[c] += x == std::numeric_limits<T>::max() || x == std::numeric_limits<T>::min();
    }
  for (uint32_t c = 0; c < channels; ++c) {
    EXPECT_EQ(counts[c].clipped, clips[c]) << "channel " << c;
    EXPECT_EQ(counts[c].non_finite, 0u);
    for (size_t pad = frames; pad < stride; ++pad) EXPECT_EQ(out[c * stride + pad], kPoison);  // untouched
  }
  EXPECT_GE(counts[0].clipped, 1u);
  EXPECT_GE(counts[last].clipped, channels > 1 ? 2u : 3u);
}

TEST_P(SampleConvertShapes, Int16DeinterleavesScalesAndCountsClips) {
  const auto [channels, frames] = GetParam();
  check_int<int16_t>(channels, frames, SampleFormat::kInt16, 1.0f / 32768);
}

TEST_P(SampleConvertShapes, Int32DeinterleavesScalesAndCountsClips) {
  const auto [channels, frames] = GetParam();
  check_int<int32_t>(channels, frames, SampleFormat::kInt32, full_scale_factor(SampleFormat::kInt32));
}

TEST_P(SampleConvertShapes, FloatDeinterleavesScalesAndCountsClipsAndNonFinite) {
  const auto [channels, frames] = GetParam();
  std::mt19937 rng(5 + channels);
  std::uniform_real_distribution<float> dist(-1.2f, 1.2f);
  std::vector<float> in(size_t(frames) * channels);
  for (auto& v : in) v = dist(rng);
  // NaN, -Inf, +Inf spread over every channel and lane; exactly 1.0 and -1.0 clip.
  for (size_t i = 7; i < in.size(); i += 97)
    in[i] = (i % 3 == 0) ? std::numeric_limits<float>::quiet_NaN() : (i % 3 == 1) ? -INFINITY : INFINITY;
  for (size_t i = 3; i < in.size(); i += 101) in[i] = (i % 2) ? 1.0f : -1.0f;
  const size_t stride = frames + 3;
  std::vector<float> out(stride * channels, kPoison);
  std::vector<ConvertCounts> counts(channels);
  convert_to_planar(in.data(), SampleFormat::kFloat32, frames, channels, 0.5f, out.data(), stride, counts.data());
  std::vector<uint64_t> clips(channels, 0), bad(channels, 0);
  for (uint32_t f = 0; f < frames; ++f)
    for (uint32_t c = 0; c < channels; ++c) {
      float x = in[size_t(f) * channels + c];
      if (!std::isfinite(x)) {
        ++bad[c];
        x = 0;
      }
      clips[c] += std::fabs(x) >= 1.0f;
      ASSERT_EQ(out[c * stride + f], x * 0.5f) << "frame " << f << " channel " << c;
      ASSERT_FALSE(std::signbit(out[c * stride + f]) && x == 0) << "a non-finite sample became -0";
    }
  for (uint32_t c = 0; c < channels; ++c) {
    EXPECT_EQ(counts[c].clipped, clips[c]) << c;
    EXPECT_EQ(counts[c].non_finite, bad[c]) << c;
    for (size_t pad = frames; pad < stride; ++pad) EXPECT_EQ(out[c * stride + pad], kPoison);
  }
}

// The counts are added to, never reset: a second conversion doubles them.
TEST(SampleConvert, CountsAddUpOverConversions) {
  const uint32_t channels = 6, frames = 64;
  std::vector<int16_t> in(size_t(frames) * channels, 100);
  for (uint32_t c = 0; c < channels; ++c) in[size_t(c) * channels + c] = -32768;
  std::vector<float> out(size_t(frames) * channels);
  std::vector<ConvertCounts> counts(channels);
  for (int pass = 1; pass <= 2; ++pass) {
    convert_to_planar(in.data(), SampleFormat::kInt16, frames, channels, 1.0f, out.data(), frames, counts.data());
    for (uint32_t c = 0; c < channels; ++c) EXPECT_EQ(counts[c].clipped, uint64_t(pass)) << "channel " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SampleConvertShapes,
                         ::testing::Values(std::pair<uint32_t, uint32_t>{3, 1000}, std::pair<uint32_t, uint32_t>{64, 1024},
                                           std::pair<uint32_t, uint32_t>{64, 1000}, std::pair<uint32_t, uint32_t>{200, 77},
                                           std::pair<uint32_t, uint32_t>{2, 5000}, std::pair<uint32_t, uint32_t>{2, 4099},
                                           std::pair<uint32_t, uint32_t>{1, 9001}, std::pair<uint32_t, uint32_t>{4, 1026},
                                           std::pair<uint32_t, uint32_t>{16, 4096}, std::pair<uint32_t, uint32_t>{7, 513},
                                           std::pair<uint32_t, uint32_t>{5, 8}));

TEST(SampleConvert, Int32FullScaleMapsToOne) {
  const std::vector<int32_t> in = {std::numeric_limits<int32_t>::min(), 0, 1 << 30, std::numeric_limits<int32_t>::max()};
  std::vector<float> out(4, kPoison);
  ConvertCounts counts;
  convert_to_planar(in.data(), SampleFormat::kInt32, 4, 1, full_scale_factor(SampleFormat::kInt32), out.data(), 4, &counts);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 0.5f);
  EXPECT_EQ(out[3], 1.0f);  // 2^31-1 rounds to 2^31 in float
  EXPECT_EQ(counts.clipped, 2u);
}

// Found by trying bad input: a 24-bit sample at positive full scale (0x7FFFFF, widened to
// 0x7FFFFF00) was not counted as clipped, while -2^23 (INT32_MIN once widened) was.
TEST(SampleConvert, A24BitSampleClipsAtEitherFullScale) {
  const std::vector<int32_t> in = {int32_t(0x7FFFFFu << 8), int32_t(0x800000u << 8), int32_t(0x7FFFFEu << 8),
                                   int32_t(0x800001u << 8), 0};
  std::vector<float> out(5, kPoison);
  std::vector<ConvertCounts> counts(5);
  for (uint32_t i = 0; i < 5; ++i)
    convert_to_planar(&in[i], SampleFormat::kInt32, 1, 1, 1.0f, &out[i], 1, &counts[i]);
  EXPECT_EQ(counts[0].clipped, 1u);  // +full scale
  EXPECT_EQ(counts[1].clipped, 1u);  // -full scale
  EXPECT_EQ(counts[2].clipped, 0u);
  EXPECT_EQ(counts[3].clipped, 0u);
  EXPECT_EQ(counts[4].clipped, 0u);
  ConvertCounts all;  // and through the vector path, four at a time
  convert_to_planar(in.data(), SampleFormat::kInt32, 4, 1, 1.0f, out.data(), 4, &all);
  EXPECT_EQ(all.clipped, 2u);
}

TEST(SampleConvert, FloatNonFiniteIsReplacedAndCounted) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // 2 channels x 4 frames
  const std::vector<float> in = {0.5f, nan, -inf, 0.25f, 1.0f, -0.75f, -1.5f, inf};
  std::vector<float> out(8, kPoison);
  std::vector<ConvertCounts> counts(2);
  convert_to_planar(in.data(), SampleFormat::kFloat32, 4, 2, 2.0f, out.data(), 4, counts.data());
  EXPECT_EQ(out, (std::vector<float>{1.0f, 0.0f, 2.0f, -3.0f, 0.0f, 0.5f, -1.5f, 0.0f}));
  EXPECT_EQ(counts[0].non_finite, 1u);  // -inf
  EXPECT_EQ(counts[1].non_finite, 2u);  // nan, inf
  EXPECT_EQ(counts[0].clipped, 2u);     // 1.0, -1.5
  EXPECT_EQ(counts[1].clipped, 0u);
}

TEST(SampleConvert, ZeroFramesTouchesNothing) {
  std::vector<float> out(4, kPoison);
  ConvertCounts counts;
  const int16_t dummy = 1;
  convert_to_planar(&dummy, SampleFormat::kInt16, 0, 1, 1.0f, out.data(), 4, &counts);
  EXPECT_EQ(out, std::vector<float>(4, kPoison));
  EXPECT_EQ(counts.clipped, 0u);
}

}  // namespace
}  // namespace vigil
