// Vibration statistics against closed forms (sine, Gaussian noise) and an independent
// double-precision computation; window/hop placement; streaming independence; rejections.
#include "dsp/vibration_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

std::vector<VibrationStats> run(WindowedVibrationStats& s, const std::vector<float>& x, uint32_t chunk) {
  std::vector<VibrationStats> out;
  for (size_t at = 0; at < x.size(); at += chunk) {
    const auto n = uint32_t(std::min<size_t>(chunk, x.size() - at));
    s.push(x.data() + at, n, [&](const VibrationStats& v) { out.push_back(v); });
  }
  return out;
}

TEST(VibrationStats, SineHasItsClosedForms) {
  // 10 whole cycles in a 1000-sample window: RMS A/sqrt2, peak A, crest sqrt2, kurtosis 3/2.
  const double a = 0.7;
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(a * std::sin(2 * std::numbers::pi * 10.0 * double(i) / 1000.0));
  WindowedVibrationStats s(1000, 1000);
  const auto r = run(s, x, 1000);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(r[0].rms, a / std::sqrt(2.0), test::kFloatValueAbs);
  EXPECT_NEAR(r[0].peak, a, test::kFloatValueAbs);
  EXPECT_NEAR(r[0].peak_to_peak, 2 * a, test::kFloatValueAbs);
  EXPECT_NEAR(r[0].crest_factor, std::sqrt(2.0), test::kFloatSampleAbs);
  EXPECT_NEAR(r[0].kurtosis, 1.5, test::kFloatSampleAbs);
  EXPECT_EQ(r[0].end_frame, 999u);
}

TEST(VibrationStats, GaussianNoiseHasKurtosisThreeAndImpactsMore) {
  const auto x = test::randn(1 << 16, 4, 0.5f);
  WindowedVibrationStats s(1 << 16, 1 << 16);
  const auto r = run(s, x, 4096);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(r[0].kurtosis, 3.0, 0.1);   // standard error of kurtosis ~ sqrt(24/N) = 0.02
  EXPECT_NEAR(r[0].rms, 0.5, 0.01);
  // Bearing-like impacts on the same noise: kurtosis rises well above 3, and so does the crest.
  std::vector<float> y = x;
  for (size_t i = 0; i < y.size(); i += 4096) y[i] += 6.0f;
  WindowedVibrationStats t(1 << 16, 1 << 16);
  const auto q = run(t, y, 4096);
  // k impacts of height A on N samples of noise sigma: m2 ~ s^2 + kA^2/N, m4 ~ 3s^4 + kA^4/N
  // (cross terms small), here 7.5 against 3 for the noise alone.
  const double s2 = 0.25, k = 16, a = 6, n = 65536;
  const double expected = (3 * s2 * s2 + k * std::pow(a, 4) / n) / std::pow(s2 + k * a * a / n, 2);
  EXPECT_NEAR(q[0].kurtosis, expected, 0.1 * expected);
  EXPECT_GT(q[0].kurtosis, 2 * r[0].kurtosis);
  EXPECT_GT(q[0].crest_factor, r[0].crest_factor);
}

TEST(VibrationStats, MatchesAnIndependentDoubleComputation) {
  const auto x = test::randn(5000, 9, 0.3f);
  std::vector<float> y(x);
  for (auto& v : y) v += 0.25f;  // a DC offset: in the RMS and peaks, not in the kurtosis
  WindowedVibrationStats s(777, 250);
  const auto r = run(s, y, 123);
  ASSERT_EQ(r.size(), (5000 - 777) / 250 + 1);
  for (const VibrationStats& v : r) {
    const size_t end = size_t(v.end_frame), begin = end + 1 - 777;
    double sum = 0, sq = 0, lo = 1e9, hi = -1e9;
    for (size_t i = begin; i <= end; ++i) {
      sum += y[i];
      sq += double(y[i]) * y[i];
      lo = std::min(lo, double(y[i]));
      hi = std::max(hi, double(y[i]));
    }
    const double mean = sum / 777;
    double m2 = 0, m4 = 0;
    for (size_t i = begin; i <= end; ++i) {
      m2 += std::pow(y[i] - mean, 2);
      m4 += std::pow(y[i] - mean, 4);
    }
    m2 /= 777;
    m4 /= 777;
    EXPECT_NEAR(v.rms, std::sqrt(sq / 777), test::kDoubleFormulaRel);
    EXPECT_NEAR(v.peak, std::max(std::fabs(lo), std::fabs(hi)), test::kDoubleFormulaRel);
    EXPECT_NEAR(v.peak_to_peak, hi - lo, test::kDoubleFormulaRel);
    EXPECT_NEAR(v.kurtosis, m4 / (m2 * m2), test::kDoubleChainRel);
    EXPECT_NEAR(v.crest_factor, v.peak / v.rms, test::kDoubleFormulaRel);
  }
  EXPECT_EQ(r[0].end_frame, 776u);
  EXPECT_EQ(r[1].end_frame, 1026u);
}

TEST(VibrationStats, ChunkingDoesNotMatterAndResetForgets) {
  const auto x = test::randn(3000, 2);
  WindowedVibrationStats a(256, 64), b(256, 64);
  const auto ra = run(a, x, 3000), rb = run(b, x, 17);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].end_frame, rb[i].end_frame);
    EXPECT_EQ(ra[i].kurtosis, rb[i].kurtosis);
    EXPECT_EQ(ra[i].rms, rb[i].rms);
  }
  a.reset();
  EXPECT_TRUE(run(a, std::vector<float>(255, 1.0f), 255).empty());  // needs a full window again
  const std::vector<float> silence(256, 0.0f);
  WindowedVibrationStats c(256, 256);
  const auto rc = run(c, silence, 256);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].crest_factor, 0.0);  // defined as 0 for a silent window, not NaN
  EXPECT_EQ(rc[0].kurtosis, 0.0);
}

TEST(VibrationStats, RejectsBadWindows) {
  EXPECT_THROW(WindowedVibrationStats(1, 1), std::invalid_argument);
  EXPECT_THROW(WindowedVibrationStats(100, 0), std::invalid_argument);
  EXPECT_THROW(WindowedVibrationStats(100, 101), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
