#include "dsp/sample_convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace vigil {
namespace {

constexpr float kPoison = -12345.0f;

// Channel counts from 3 to 200 and frame counts that are and are not whole tiles of the
// de-interleaving (about 8 KiB of input a tile).
class SampleConvertShapes : public ::testing::TestWithParam<std::pair<uint32_t, uint32_t>> {};

TEST_P(SampleConvertShapes, Int16DeinterleavesScalesAndCountsClips) {
  const auto [channels, frames] = GetParam();
  std::mt19937 rng(11 + channels);
  std::uniform_int_distribution<int> dist(-32768, 32767);
  std::vector<int16_t> in(frames * channels);
  for (auto& v : in) v = int16_t(dist(rng));
  in[5 * channels + 1] = 32767;
  in[6 * channels + 1] = -32768;
  in[7 * channels + 2] = 32767;
  const size_t stride = frames + 5;
  std::vector<float> out(stride * channels, kPoison);
  std::vector<ConvertCounts> counts(channels);
  convert_to_planar(in.data(), SampleFormat::kInt16, frames, channels, 1.0f / 32768, out.data(), stride, counts.data());

  std::vector<uint64_t> clips(channels, 0);
  for (uint32_t f = 0; f < frames; ++f)
    for (uint32_t c = 0; c < channels; ++c) {
      const int16_t x = in[f * channels + c];
      ASSERT_EQ(out[c * stride + f], float(x) / 32768.0f) << "frame " << f << " channel " << c;
      clips[c] += x == 32767 || x == -32768;
    }
  for (uint32_t c = 0; c < channels; ++c) {
    EXPECT_EQ(counts[c].clipped, clips[c]);
    EXPECT_EQ(counts[c].non_finite, 0u);
    for (size_t pad = frames; pad < stride; ++pad) EXPECT_EQ(out[c * stride + pad], kPoison);  // untouched
  }
  EXPECT_GE(counts[1].clipped, 2u);
}

TEST_P(SampleConvertShapes, FloatDeinterleavesScalesAndCountsClipsAndNonFinite) {
  const auto [channels, frames] = GetParam();
  std::mt19937 rng(5 + channels);
  std::uniform_real_distribution<float> dist(-1.2f, 1.2f);
  std::vector<float> in(size_t(frames) * channels);
  for (auto& v : in) v = dist(rng);
  for (size_t i = 7; i < in.size(); i += 97) in[i] = (i % 2) ? std::numeric_limits<float>::quiet_NaN() : -INFINITY;
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
    }
  for (uint32_t c = 0; c < channels; ++c) {
    EXPECT_EQ(counts[c].clipped, clips[c]) << c;
    EXPECT_EQ(counts[c].non_finite, bad[c]) << c;
    for (size_t pad = frames; pad < stride; ++pad) EXPECT_EQ(out[c * stride + pad], kPoison);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SampleConvertShapes,
                         ::testing::Values(std::pair<uint32_t, uint32_t>{3, 1000}, std::pair<uint32_t, uint32_t>{64, 1024},
                                           std::pair<uint32_t, uint32_t>{64, 1000}, std::pair<uint32_t, uint32_t>{200, 77},
                                           std::pair<uint32_t, uint32_t>{2, 5000}));

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
