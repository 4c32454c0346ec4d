// Two passes over the window in double: the mean, then the central moments (stable for any DC).
#include "dsp/vibration_stats.hpp"

#include <algorithm>
#include <cmath>

namespace vigil {

WindowedVibrationStats::WindowedVibrationStats(uint32_t window, uint32_t hop) : window_(window), hop_(hop) {
  if (window < 2 || window > (1u << 24))
    throw std::invalid_argument("vibration stats: window must be 2..16777216 samples, got " + std::to_string(window));
  if (hop < 1 || hop > window)
    throw std::invalid_argument("vibration stats: hop must be 1..window (" + std::to_string(window) + "), got " +
                                std::to_string(hop));
  ring_.assign(window, 0.0f);
}

void WindowedVibrationStats::reset() noexcept {
  std::fill(ring_.begin(), ring_.end(), 0.0f);
  pos_ = 0;
  seen_ = 0;
}

namespace {

// Eight independent partial sums per quantity, so the loops vectorise (SSE2/AVX on x86-64, NEON on
// aarch64) and are not bound by one long chain of dependent additions; the sums stay in double.
constexpr size_t kPartials = 8;

struct RawSums {
  double sum[kPartials] = {}, sum_sq[kPartials] = {};
  float lo[kPartials], hi[kPartials];
  explicit RawSums(float first) { std::fill_n(lo, kPartials, first), std::fill_n(hi, kPartials, first); }
  void add(const float* x, size_t n) noexcept {
    size_t i = 0;
    for (; i + kPartials <= n; i += kPartials)
      for (size_t j = 0; j < kPartials; ++j) {
        const float v = x[i + j];
        sum[j] += double(v);
        sum_sq[j] += double(v) * double(v);
        lo[j] = lo[j] < v ? lo[j] : v;
        hi[j] = hi[j] > v ? hi[j] : v;
      }
    for (; i < n; ++i) {
      const float v = x[i];
      sum[0] += double(v);
      sum_sq[0] += double(v) * double(v);
      lo[0] = std::min(lo[0], v);
      hi[0] = std::max(hi[0], v);
    }
  }
};

struct CentralSums {
  double m2[kPartials] = {}, m4[kPartials] = {};
  void add(const float* x, size_t n, double mean) noexcept {
    size_t i = 0;
    for (; i + kPartials <= n; i += kPartials)
      for (size_t j = 0; j < kPartials; ++j) {
        const double d = double(x[i + j]) - mean, d2 = d * d;
        m2[j] += d2;
        m4[j] += d2 * d2;
      }
    for (; i < n; ++i) {
      const double d = double(x[i]) - mean, d2 = d * d;
      m2[0] += d2;
      m4[0] += d2 * d2;
    }
  }
};

double total(const double (&v)[kPartials]) noexcept {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

VibrationStats vibration_stats(const float* x, size_t count) noexcept { return vibration_stats(x, count, nullptr, 0); }

VibrationStats vibration_stats(const float* a, size_t na, const float* b, size_t nb) noexcept {
  RawSums raw(na ? a[0] : b[0]);
  raw.add(a, na);
  raw.add(b, nb);
  const double n = double(na + nb), mean = total(raw.sum) / n;
  CentralSums central;
  central.add(a, na, mean);
  central.add(b, nb, mean);
  const double m2 = total(central.m2) / n, m4 = total(central.m4) / n;
  const double lo = *std::min_element(raw.lo, raw.lo + kPartials), hi = *std::max_element(raw.hi, raw.hi + kPartials);
  VibrationStats s;
  s.rms = std::sqrt(total(raw.sum_sq) / n);
  s.peak = std::max(std::fabs(lo), std::fabs(hi));
  s.peak_to_peak = hi - lo;
  s.crest_factor = s.rms > 0 ? s.peak / s.rms : 0.0;
  s.kurtosis = m2 > 0 ? m4 / (m2 * m2) : 0.0;
  return s;
}

VibrationStats WindowedVibrationStats::compute() const noexcept {
  VibrationStats s = vibration_stats(ring_.data(), ring_.size());
  s.end_frame = seen_ - 1;
  return s;
}

}  // namespace vigil
