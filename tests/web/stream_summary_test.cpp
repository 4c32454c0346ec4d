// StreamSummary against direct computation on fresh random input fed in random packet sizes.
#include "web/stream_summary.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace vigil::web {
namespace {

std::vector<float> random_signal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 0.3f);
  std::vector<float> x(n);
  for (float& v : x) v = g(rng);
  return x;
}

// Feeds x in packets of 1..400 samples, stamped from t0 at `rate`.
void feed(StreamSummary& s, const std::vector<float>& x, double rate, double t0, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> len(1, 400);
  for (size_t i = 0; i < x.size();) {
    const size_t n = std::min(len(rng), x.size() - i);
    s.add(x.data() + i, n, t0 + double(i) / rate);
    i += n;
  }
}

TEST(StreamSummary, EnvelopeIsTheMinAndMaxOfEachGroupOfBuckets) {
  const double rate = 10000;
  SummaryOptions o;
  o.window_s = 0.5;
  o.envelope_buckets = 200;  // 25 samples per bucket
  StreamSummary s(rate, o);
  ASSERT_EQ(s.bucket_samples(), 25u);
  const std::vector<float> x = random_signal(12345, 1);  // 493 whole buckets: the ring wrapped
  const double t0 = 1.8e9;
  feed(s, x, rate, t0, 2);
  for (size_t points : {200u, 64u, 7u, 1u}) {
    const StreamSummary::Envelope e = s.envelope(points);
    const size_t complete = x.size() / 25, kept = std::min<size_t>(complete, 200);
    const size_t group = (kept + points - 1) / points, groups = (kept + group - 1) / group;
    ASSERT_EQ(e.mn.size(), groups) << points;
    // Walk back from the newest complete bucket: group g (from the end) covers whole buckets.
    size_t end_bucket = complete;  // exclusive
    for (size_t k = 0; k < groups; ++k) {
      const size_t g = groups - 1 - k;
      const size_t len = (g == 0) ? kept - (groups - 1) * group : group;
      const size_t b0 = end_bucket - len;
      const auto first = x.begin() + long(b0 * 25), last = x.begin() + long(end_bucket * 25);
      EXPECT_EQ(e.mn[g], *std::min_element(first, last)) << points << " group " << g;
      EXPECT_EQ(e.mx[g], *std::max_element(first, last)) << points << " group " << g;
      end_bucket = b0;
    }
    EXPECT_NEAR(e.t_last_s, t0 + double(complete * 25 - 1) / rate, 1e-6);
    EXPECT_DOUBLE_EQ(e.dt_s, double(group * 25) / rate);
  }
}

TEST(StreamSummary, SpectrumEqualsADirectDftOfTheNewestFrame) {
  const double rate = 8192;
  SummaryOptions o;
  o.fft_size = 256;
  StreamSummary s(rate, o);
  std::vector<float> x = random_signal(1000, 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 0.7f * float(std::sin(2 * M_PI * 1000.0 * double(i) / rate));
  EXPECT_FALSE(s.update_spectrum());  // nothing yet
  feed(s, x, rate, 0, 4);
  ASSERT_TRUE(s.update_spectrum());
  const size_t n = 256, bins = n / 2 + 1;
  ASSERT_EQ(s.last_power().size(), bins);
  // Direct: the newest n samples, mean removed, periodic Hann, one-sided power scaled to A².
  std::vector<double> f(x.end() - long(n), x.end());
  double mean = 0, wsum = 0;
  for (double v : f) mean += v;
  mean /= double(n);
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) wsum += (w[i] = 0.5 - 0.5 * std::cos(2 * M_PI * double(i) / double(n)));
  double max_rel = 0;
  for (size_t k = 0; k < bins; ++k) {
    std::complex<double> acc = 0;
    for (size_t i = 0; i < n; ++i) acc += (f[i] - mean) * w[i] * std::polar(1.0, -2 * M_PI * double(k * i) / double(n));
    const double p = std::norm(acc) * 4 / (wsum * wsum) * (k == 0 || k == bins - 1 ? 0.25 : 1.0);
    max_rel = std::max(max_rel, std::fabs(s.last_power()[k] - p) / std::max(p, 1e-6));
  }
  EXPECT_LT(max_rel, 1e-3);  // float32 FFT of a float32 frame against double
  // The sine at 1000 Hz = bin 31.25: the peak is bin 31, and the first spectrum is that frame's.
  const std::vector<float>& db = s.spectrum_db();
  const size_t peak = size_t(std::max_element(db.begin() + 1, db.end()) - db.begin());
  EXPECT_NEAR(double(peak) * s.bin_hz(), 1000.0, s.bin_hz());
  EXPECT_NEAR(db[31], 10 * std::log10(s.last_power()[31]), 1e-3);
}

TEST(StreamSummary, AveragedSpectrumFollowsTheExponentialRule) {
  SummaryOptions o;
  o.fft_size = 64;
  o.spectrum_alpha = 0.25;
  StreamSummary s(1000, o);
  const std::vector<float> a = random_signal(64, 5), b = random_signal(64, 6);
  s.add(a.data(), a.size(), 0);
  ASSERT_TRUE(s.update_spectrum());
  const std::vector<double> pa = s.last_power();
  ASSERT_TRUE(s.update_spectrum());  // no new sample: unchanged
  s.add(b.data(), b.size(), 0.064);
  ASSERT_TRUE(s.update_spectrum());
  const std::vector<double> pb = s.last_power();
  for (size_t k = 0; k < pa.size(); ++k)
    EXPECT_NEAR(s.spectrum_db()[k], 10 * std::log10(0.75 * pa[k] + 0.25 * pb[k] + 1e-30), 1e-3) << k;
}

TEST(StreamSummary, SineOfAmplitudeAReadsItsLevelInDecibels) {
  SummaryOptions o;
  o.fft_size = 1024;
  const double rate = 51200;
  StreamSummary s(rate, o);
  std::vector<float> x(4096);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * float(std::sin(2 * M_PI * 3000.0 * double(i) / rate));  // bin 60
  s.add(x.data(), x.size(), 0);
  ASSERT_TRUE(s.update_spectrum());
  EXPECT_NEAR(s.spectrum_db()[60], 20 * std::log10(0.5), 0.01);
}

TEST(StreamSummary, TrendIsTheRmsOfConsecutiveWindowsAndGroupsKeepTheLargest) {
  const double rate = 1000;
  SummaryOptions o;
  o.trend_window_s = 0.05;  // 50 samples
  o.trend_span_s = 2;       // 40 windows kept
  StreamSummary s(rate, o);
  ASSERT_EQ(s.trend_samples(), 50u);
  const std::vector<float> x = random_signal(3333, 7);  // 66 windows: wrapped
  feed(s, x, rate, 100, 8);
  auto rms = [&](size_t w) {
    double acc = 0;
    for (size_t i = w * 50; i < (w + 1) * 50; ++i) acc += double(x[i]) * x[i];
    return std::sqrt(acc / 50);
  };
  const StreamSummary::Trend all = s.trend(1000);
  ASSERT_EQ(all.rms.size(), 40u);
  for (size_t i = 0; i < 40; ++i) EXPECT_NEAR(all.rms[i], rms(26 + i), 1e-5) << i;
  EXPECT_NEAR(all.t_last_s, 100 + 3299.0 / rate, 1e-9);
  const StreamSummary::Trend few = s.trend(8);  // groups of 5
  ASSERT_EQ(few.rms.size(), 8u);
  for (size_t g = 0; g < 8; ++g) {
    double m = 0;
    for (size_t j = 0; j < 5; ++j) m = std::max(m, rms(26 + g * 5 + j));
    EXPECT_NEAR(few.rms[g], m, 1e-5) << g;
  }
}

TEST(StreamSummary, RejectsOptionsOutOfRange) {
  SummaryOptions o;
  EXPECT_THROW(StreamSummary(0, o), std::invalid_argument);
  o.fft_size = 1000;
  EXPECT_THROW(StreamSummary(1000, o), std::invalid_argument);
}

}  // namespace
}  // namespace vigil::web
