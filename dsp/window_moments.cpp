#include "dsp/window_moments.hpp"

#include <algorithm>
#include <cmath>

namespace vigil {

Moments merge(const Moments& a, const Moments& b) noexcept {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  const double na = a.n, nb = b.n, n = na + nb, d = b.mean - a.mean, d2 = d * d;
  Moments m;
  m.n = n;
  m.mean = a.mean + d * nb / n;
  m.m2 = a.m2 + b.m2 + d2 * na * nb / n;
  m.m3 = a.m3 + b.m3 + d2 * d * na * nb * (na - nb) / (n * n) + 3 * d * (na * b.m2 - nb * a.m2) / n;
  m.m4 = a.m4 + b.m4 + d2 * d2 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n) +
         6 * d2 * (na * na * b.m2 + nb * nb * a.m2) / (n * n) + 4 * d * (na * b.m3 - nb * a.m3) / n;
  m.lo = std::min(a.lo, b.lo);
  m.hi = std::max(a.hi, b.hi);
  return m;
}

VibrationStats stats_of(const Moments& m) noexcept {
  VibrationStats s;
  const double var = m.m2 / m.n;
  s.rms = std::sqrt(std::max(0.0, var + m.mean * m.mean));
  s.peak = std::max(std::fabs(double(m.lo)), std::fabs(double(m.hi)));
  s.peak_to_peak = double(m.hi) - double(m.lo);
  s.crest_factor = s.rms > 0 ? s.peak / s.rms : 0.0;
  s.kurtosis = var > 0 ? (m.m4 / m.n) / (var * var) : 0.0;
  return s;
}

Moments moments_of(const float* x, size_t n) noexcept {
  constexpr size_t kPartials = 4;  // measured: 4 beats 8 and 2 with SSE2 doubles
  const double k = x[0];
  double s1[kPartials] = {}, s2[kPartials] = {}, s3[kPartials] = {}, s4[kPartials] = {};
  float lo[kPartials], hi[kPartials];
  std::fill_n(lo, kPartials, x[0]);
  std::fill_n(hi, kPartials, x[0]);
  size_t i = 0;
  for (; i + kPartials <= n; i += kPartials)
    for (size_t j = 0; j < kPartials; ++j) {
      const float v = x[i + j];
      const double d = double(v) - k, d2 = d * d;
      s1[j] += d;
      s2[j] += d2;
      s3[j] += d2 * d;
      s4[j] += d2 * d2;
      lo[j] = lo[j] < v ? lo[j] : v;
      hi[j] = hi[j] > v ? hi[j] : v;
    }
  for (; i < n; ++i) {
    const float v = x[i];
    const double d = double(v) - k, d2 = d * d;
    s1[0] += d;
    s2[0] += d2;
    s3[0] += d2 * d;
    s4[0] += d2 * d2;
    lo[0] = std::min(lo[0], v);
    hi[0] = std::max(hi[0], v);
  }
  double t1 = 0, t2 = 0, t3 = 0, t4 = 0;
  for (size_t j = 0; j < kPartials; ++j) t1 += s1[j], t2 += s2[j], t3 += s3[j], t4 += s4[j];
  // Power sums about k -> central sums about the mean (d: mean - k).
  Moments m;
  const double count = double(n), d = t1 / count, d2 = d * d;
  m.n = count;
  m.mean = k + d;
  m.m2 = std::max(0.0, t2 - count * d2);
  m.m3 = t3 - 3 * d * t2 + 2 * count * d2 * d;
  m.m4 = std::max(0.0, t4 - 4 * d * t3 + 6 * d2 * t2 - 3 * count * d2 * d2);
  m.lo = *std::min_element(lo, lo + kPartials);
  m.hi = *std::max_element(hi, hi + kPartials);
  return m;
}

}  // namespace vigil
