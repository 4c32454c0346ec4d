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

VibrationStats vibration_stats(const float* x, size_t count) noexcept {
  double sum = 0, sum_sq = 0, lo = x[0], hi = x[0];
  for (size_t i = 0; i < count; ++i) {
    const float v = x[i];
    sum += v;
    sum_sq += double(v) * v;
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
  }
  const double n = double(count), mean = sum / n;
  double m2 = 0, m4 = 0;
  for (size_t i = 0; i < count; ++i) {
    const double d = double(x[i]) - mean, d2 = d * d;
    m2 += d2;
    m4 += d2 * d2;
  }
  m2 /= n;
  m4 /= n;
  VibrationStats s;
  s.rms = std::sqrt(sum_sq / n);
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
