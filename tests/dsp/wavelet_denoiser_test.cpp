// Denoising against PyWavelets (VisuShrink), and the streaming form's continuity and latency.
#include "dsp/wavelet_denoiser.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

using test::expect_close_to_reference;

TEST(WaveletDenoiser, VisuShrinkEqualsSharedReference) {
  const auto x64 = test::read_f64("input_x.bin");
  std::vector<float> x(x64.begin(), x64.end()), y(x.size(), -999.0f);
  DenoiseSpec spec;
  spec.wavelet = "db8";
  spec.levels = 0;  // pywt's max level: 8
  WaveletDenoiser den(spec, x.size());
  EXPECT_EQ(den.levels(), 8u);
  den.process(x.data(), y.data());
  expect_close_to_reference(y, test::read_f64("db8_visushrink_y.bin"), "db8 visushrink");
  EXPECT_NEAR(den.last_threshold(1), 1.4038452281137297, test::kFloatSampleAbs);  // shared/reference/README
}

TEST(WaveletDenoiser, SoftHardFinestPerLevelEqualPywt) {
  const auto x64 = test::read_f64("wavelet_x.bin");
  const std::vector<float> x(x64.begin(), x64.end());
  for (const auto& [name, levels] : std::vector<std::pair<std::string, unsigned>>{
           {"haar", 5}, {"db2", 6}, {"db20", 4}, {"sym5", 6}, {"sym20", 3}})
    for (const char* mode : {"soft", "hard"})
      for (const char* noise : {"finest", "perlevel"}) {
        DenoiseSpec spec{name, levels, *parse_threshold_mode(mode),
                         std::string(noise) == "finest" ? NoiseEstimate::kFinest : NoiseEstimate::kPerLevel, 1.0};
        WaveletDenoiser den(spec, x.size());
        std::vector<float> y(x);
        den.process(y.data(), y.data());  // in place
        const std::string file = "denoise_" + name + "_" + std::to_string(levels) + "_" + mode + "_" + noise + ".bin";
        expect_close_to_reference(y, test::read_f64(file), file);
      }
}

TEST(WaveletDenoiser, ZeroThresholdIsTheIdentity) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  std::vector<float> x(512), y(512);
  for (auto& v : x) v = d(rng);
  WaveletDenoiser den({"sym8", 0, ThresholdMode::kSoft, NoiseEstimate::kFinest, 0.0}, 512);
  den.process(x.data(), y.data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], test::kFloatSampleAbs) << i;
}

std::vector<float> run_stream(StreamingDenoiser& s, const std::vector<float>& x, uint32_t chunk) {
  std::vector<float> y(x.size());
  for (size_t at = 0; at < x.size(); at += chunk) {
    const auto n = uint32_t(std::min<size_t>(chunk, x.size() - at));
    s.process(x.data() + at, n, n, y.data() + at, n);
  }
  return y;
}

TEST(StreamingDenoiser, ZeroThresholdReturnsTheInputDelayedByTheWindow) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  std::vector<float> x(20000);
  for (auto& v : x) v = d(rng);
  StreamingDenoiser s({"db4", 0, ThresholdMode::kSoft, NoiseEstimate::kFinest, 0.0}, 1024, 1);
  EXPECT_EQ(s.latency_frames(), 1024u);
  const auto y = run_stream(s, x, 333);
  // The delayed zeros before the stream: zero up to the float round trip through the DWT.
  for (size_t i = 0; i < 1024; ++i) ASSERT_NEAR(y[i], 0.0f, test::kFloatSampleAbs) << i;
  for (size_t i = 1024; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i - 1024], test::kFloatSampleAbs) << i;
}

TEST(StreamingDenoiser, ChunkSizeDoesNotMatterAndNoStepAtBoundaries) {
  // A slow sine in noise: the denoised stream must be as smooth at window and chunk boundaries
  // as anywhere else.
  std::mt19937 rng(6);
  std::normal_distribution<float> d(0.0f, 0.3f);
  std::vector<float> x(65536);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(2 * std::numbers::pi * double(i) / 4000.0)) + d(rng);
  const DenoiseSpec spec{"sym8", 5, ThresholdMode::kSoft, NoiseEstimate::kFinest, 1.0};
  StreamingDenoiser a(spec, 2048, 1), b(spec, 2048, 1);
  const auto ya = run_stream(a, x, 1000), yb = run_stream(b, x, 77);
  ASSERT_EQ(ya, yb);
  // First differences at hop boundaries (every 1024 samples, in output time) against all others.
  std::vector<float> inside, boundary;
  for (size_t i = 4096; i + 1 < ya.size(); ++i) {
    const float step = std::fabs(ya[i + 1] - ya[i]);
    ((i + 1) % 1024 == 0 ? boundary : inside).push_back(step);
  }
  std::sort(inside.begin(), inside.end());
  const float p99 = inside[inside.size() * 99 / 100];
  for (float s : boundary) EXPECT_LT(s, p99) << "a step at a window boundary";
  // And it did denoise: closer to the clean sine than the input is.
  double err_in = 0, err_out = 0;
  for (size_t i = 4096; i < x.size(); ++i) {
    const double clean = std::sin(2 * std::numbers::pi * double(i - 2048) / 4000.0);
    err_out += (ya[i] - clean) * (ya[i] - clean);
    const double clean_in = std::sin(2 * std::numbers::pi * double(i) / 4000.0);
    err_in += (x[i] - clean_in) * (x[i] - clean_in);
  }
  EXPECT_LT(err_out, 0.5 * err_in);
}

TEST(WaveletDenoiser, RejectsBadParameters) {
  EXPECT_THROW(WaveletDenoiser({"db99"}, 1024), std::invalid_argument);
  EXPECT_THROW(WaveletDenoiser({"db4", 3}, 100), std::invalid_argument);
  EXPECT_THROW(WaveletDenoiser({"db4", 3, ThresholdMode::kSoft, NoiseEstimate::kFinest, -1.0}, 64), std::invalid_argument);
  EXPECT_THROW(StreamingDenoiser({"db4"}, 1000, 1), std::invalid_argument);
  EXPECT_THROW(StreamingDenoiser({"db4"}, 1024, 0), std::invalid_argument);
  EXPECT_FALSE(parse_threshold_mode("medium"));
  EXPECT_FALSE(parse_noise_estimate("coarsest"));
}

}  // namespace
}  // namespace vigil
