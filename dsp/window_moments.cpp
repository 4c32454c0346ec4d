#include "dsp/window_moments.hpp"

#include <algorithm>
#include <cmath>

#include "dsp/simd.hpp"

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
  // Four partial sums per power (sample i to partial i % 4), written as vectors: two doubles per
  // SSE2/NEON register. Left to the vectoriser, the same loop ran 0.43 ns a sample at -O2 and
  // 1.07 at -O3 (GCC 12; the library builds at -O3); this form runs 0.51 at both.
  typedef double v2d __attribute__((vector_size(16)));
  using simd::v4f;
  const double k = x[0];
  const v2d kk = {k, k};
  v2d s1a = {}, s2a = {}, s3a = {}, s4a = {}, s1b = {}, s2b = {}, s3b = {}, s4b = {};
  v4f lo = {x[0], x[0], x[0], x[0]}, hi = lo;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v4f v = simd::load4(x + i);
    lo = lo < v ? lo : v;  // a NaN sample makes lo and hi NaN, as it does the sums
    hi = hi > v ? hi : v;
    const v2d da = __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1), v2d) - kk;
    const v2d db = __builtin_convertvector(__builtin_shufflevector(v, v, 2, 3), v2d) - kk;
    const v2d da2 = da * da, db2 = db * db;
    s1a += da;
    s2a += da2;
    s3a += da2 * da;
    s4a += da2 * da2;
    s1b += db;
    s2b += db2;
    s3b += db2 * db;
    s4b += db2 * db2;
  }
  double t1 = s1a[0] + s1a[1] + s1b[0] + s1b[1], t2 = s2a[0] + s2a[1] + s2b[0] + s2b[1];
  double t3 = s3a[0] + s3a[1] + s3b[0] + s3b[1], t4 = s4a[0] + s4a[1] + s4b[0] + s4b[1];
  float mn = *std::min_element(&lo[0], &lo[0] + 4), mx = *std::max_element(&hi[0], &hi[0] + 4);
  for (; i < n; ++i) {
    const float v = x[i];
    const double d = double(v) - k, d2 = d * d;
    t1 += d;
    t2 += d2;
    t3 += d2 * d;
    t4 += d2 * d2;
    mn = mn < v ? mn : v;
    mx = mx > v ? mx : v;
  }
  // Power sums about k -> central sums about the mean (d: mean - k).
  Moments m;
  const double count = double(n), d = t1 / count, d2 = d * d;
  m.n = count;
  m.mean = k + d;
  m.m2 = std::max(0.0, t2 - count * d2);
  m.m3 = t3 - 3 * d * t2 + 2 * count * d2 * d;
  m.m4 = std::max(0.0, t4 - 4 * d * t3 + 6 * d2 * t2 - 3 * count * d2 * d2);
  m.lo = mn;
  m.hi = mx;
  return m;
}

}  // namespace vigil
