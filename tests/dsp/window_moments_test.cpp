// Segment moments against a direct reference: the statistics of a window merged from runs of any
// lengths (1 sample included) equal those computed over the whole window in long double, for
// Gaussian noise, a large DC offset, a sine and impulsive data; merging is order-independent.
#include "dsp/window_moments.hpp"
#include "../support/tolerances.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace vigil {
namespace {

struct Reference {
  long double rms, kurtosis;
  float lo, hi;
};

// Two passes in long double: independent of the code under test.
Reference reference(const std::vector<float>& x) {
  long double sum = 0, sq = 0;
  float lo = x[0], hi = x[0];
  for (float v : x) sum += v, sq += (long double)v * v, lo = std::min(lo, v), hi = std::max(hi, v);
  const long double n = x.size(), mean = sum / n;
  long double m2 = 0, m4 = 0;
  for (float v : x) {
    const long double d = v - mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  return {std::sqrt(sq / n), (m4 / n) / ((m2 / n) * (m2 / n)), lo, hi};
}

using Form = Moments (*)(const float*, size_t) noexcept;

// The window cut into runs of random lengths 1..max_run, each summarised and merged in order.
Moments merged_runs(const std::vector<float>& x, size_t max_run, std::mt19937& rng, Form form) {
  std::uniform_int_distribution<size_t> len(1, max_run);
  Moments m;
  for (size_t i = 0; i < x.size();) {
    const size_t n = std::min(len(rng), x.size() - i);
    m = merge(m, form(x.data() + i, n));
    i += n;
  }
  return m;
}

// moments_of() and both of its forms (the one this machine does not take is tested here too).
void expect_matches(const std::vector<float>& x, const char* what) {
  std::mt19937 rng(17);
  const Reference want = reference(x);
  for (Form form : {Form(moments_of), Form(detail::moments_of_wide), Form(detail::moments_of_narrow)})
  for (size_t max_run : {size_t(1), size_t(7), size_t(1024), x.size()}) {
    const Moments m = merged_runs(x, max_run, rng, form);
    ASSERT_EQ(m.n, double(x.size()));
    const VibrationStats s = stats_of(m);
    EXPECT_NEAR(s.rms, double(want.rms), test::kDoubleFormulaRel * double(want.rms)) << what << ", runs up to " << max_run;
    EXPECT_NEAR(s.kurtosis, double(want.kurtosis), test::kDoubleChainRel * double(want.kurtosis)) << what << ", runs up to " << max_run;
    EXPECT_EQ(s.peak, std::max(std::fabs(double(want.lo)), std::fabs(double(want.hi)))) << what;
    EXPECT_EQ(s.peak_to_peak, double(want.hi) - double(want.lo)) << what;
    EXPECT_NEAR(s.crest_factor, s.peak / double(want.rms), test::kDoubleFormulaRel * s.crest_factor) << what;
  }
}

TEST(WindowMoments, MergedRunsEqualTheWholeWindow) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  const size_t n = 51200;
  std::vector<float> noise(n), offset(n), sine(n), impulsive(n);
  for (size_t i = 0; i < n; ++i) {
    noise[i] = g(rng);
    offset[i] = 1000.0f + 0.01f * g(rng);  // DC 10^5 standard deviations away from zero
    sine[i] = float(0.7 * std::sin(0.01 * double(i))) + 1e-3f * g(rng);
    impulsive[i] = 0.01f * g(rng) + (i % 5000 == 17 ? 5.0f : 0.0f);  // crest factor ~60
  }
  expect_matches(noise, "noise");
  expect_matches(offset, "DC offset");
  expect_matches(sine, "sine");
  expect_matches(impulsive, "impulsive");
}

TEST(WindowMoments, MergeIsOrderIndependentAndEmptyIsNeutral) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 3.0f);
  std::vector<float> x(3000);
  for (float& v : x) v = u(rng);
  const Moments a = moments_of(x.data(), 1000), b = moments_of(x.data() + 1000, 2000);
  const Moments ab = merge(a, b), ba = merge(b, a);
  EXPECT_NEAR(ab.mean, ba.mean, test::kDoubleUlpsAbs);
  EXPECT_NEAR(ab.m2, ba.m2, test::kDoubleSumRel * ab.m2);
  EXPECT_NEAR(ab.m3, ba.m3, test::kDoubleChainRel * std::fabs(ab.m2));
  EXPECT_NEAR(ab.m4, ba.m4, test::kDoubleSumRel * ab.m4);
  const Moments whole = moments_of(x.data(), x.size());
  EXPECT_NEAR(ab.m4, whole.m4, test::kDoubleSumRel * whole.m4);
  const Moments same = merge(Moments{}, a);
  EXPECT_EQ(same.n, a.n);
  EXPECT_EQ(same.m4, a.m4);
  EXPECT_EQ(merge(a, Moments{}).m2, a.m2);
}

// Every run length around the vector steps (4 and 8 samples) and their tails: the two forms agree
// to within double rounding, with the extremes exact; a NaN sample makes the mean NaN in both.
TEST(WindowMoments, BothFormsAgreeAtEveryRunLength) {
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.3f, 2.0f);
  for (size_t n = 1; n <= 40; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = noise(rng);
    const Moments w = detail::moments_of_wide(x.data(), n), v = detail::moments_of_narrow(x.data(), n);
    const Reference want = reference(x);
    ASSERT_EQ(w.n, double(n));
    ASSERT_EQ(v.n, double(n));
    EXPECT_NEAR(w.mean, v.mean, 10 * test::kDoubleUlpsAbs) << n;
    EXPECT_NEAR(w.m2, v.m2, test::kDoubleSumRel * std::max(1.0, v.m2)) << n;
    EXPECT_NEAR(w.m3, v.m3, test::kDoubleSumRel * std::max(1.0, std::fabs(v.m3))) << n;
    EXPECT_NEAR(w.m4, v.m4, test::kDoubleSumRel * std::max(1.0, v.m4)) << n;
    EXPECT_EQ(w.lo, want.lo) << n;
    EXPECT_EQ(w.hi, want.hi) << n;
    EXPECT_EQ(v.lo, want.lo) << n;
    EXPECT_EQ(v.hi, want.hi) << n;
    x[n / 2] = std::nanf("");
    EXPECT_TRUE(std::isnan(detail::moments_of_wide(x.data(), n).mean)) << n;
    EXPECT_TRUE(std::isnan(detail::moments_of_narrow(x.data(), n).mean)) << n;
  }
}

TEST(WindowMoments, ConstantWindowHasNoKurtosis) {
  const std::vector<float> x(4096, 0.25f);
  const VibrationStats s = stats_of(moments_of(x.data(), x.size()));
  EXPECT_EQ(s.kurtosis, 0.0);
  EXPECT_DOUBLE_EQ(s.rms, 0.25);
  EXPECT_DOUBLE_EQ(s.crest_factor, 1.0);
  EXPECT_EQ(s.peak_to_peak, 0.0);
}

}  // namespace
}  // namespace vigil
