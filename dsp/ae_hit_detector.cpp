#include "dsp/ae_hit_detector.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {

void check(const char* name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    std::ostringstream m;
    m << "ae_hits: " << name << " must be " << lo << ".." << hi << ", got " << v;
    throw std::invalid_argument(m.str());
  }
}

uint64_t samples(double t_s, double rate_hz) { return uint64_t(std::llround(t_s * rate_hz)); }

}  // namespace

uint32_t AeHitDetector::first_at_or_above(const float* x, uint32_t n, float threshold) noexcept {
  constexpr uint32_t kBlock = 32;  // tested together (a vector compare), then one by one
  uint32_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int any = 0;
    for (uint32_t j = 0; j < kBlock; ++j) any |= int(std::fabs(x[i + j]) >= threshold);
    if (any) break;
  }
  for (; i < n; ++i)
    if (std::fabs(x[i]) >= threshold) return i;
  return n;
}

void AeHitDetector::add_sums(const float* x, uint32_t n, double& sum_sq, double& sum_abs) noexcept {
  double sq[4] = {0, 0, 0, 0}, ab[4] = {0, 0, 0, 0};
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (uint32_t j = 0; j < 4; ++j) {
      const double v = x[i + j];
      sq[j] += v * v;
      ab[j] += std::fabs(v);
    }
  for (; i < n; ++i) {
    const double v = x[i];
    sq[0] += v * v;
    ab[0] += std::fabs(v);
  }
  sum_sq += (sq[0] + sq[1]) + (sq[2] + sq[3]);
  sum_abs += (ab[0] + ab[1]) + (ab[2] + ab[3]);
}

AeSampleParams ae_sample_params(const AeHitSettings& s, double rate_hz) {
  check("threshold_db", s.threshold_db, -20, 140);
  check("floating_margin_db", s.floating_margin_db, 0, 60);
  check("hdt_s", s.hdt_s, 0, 1);
  check("pdt_s", s.pdt_s, 0, 1);
  check("hlt_s", s.hlt_s, 0, 1);
  check("max_duration_s", s.max_duration_s, 1e-6, 10);
  check("full_scale_v", s.full_scale_v, 1e-6, 1e3);
  check("preamp_gain_db", s.preamp_gain_db, -20, 100);
  check("level_interval_s", s.level_interval_s, 0, 3600);
  AeSampleParams p;
  p.rate_hz = rate_hz;
  p.volts_per_unit = s.full_scale_v / std::pow(10.0, s.preamp_gain_db / 20.0);
  p.threshold = float(1e-6 * std::pow(10.0, s.threshold_db / 20.0) / p.volts_per_unit);
  p.hdt = samples(s.hdt_s, rate_hz);
  p.pdt = samples(s.pdt_s, rate_hz);
  p.hlt = samples(s.hlt_s, rate_hz);
  p.max_duration = std::max<uint64_t>(1, samples(s.max_duration_s, rate_hz));
  if (s.floating_margin_db > 0) {
    check("floating_window_s (in samples)", double(samples(s.floating_window_s, rate_hz)), 32, 1u << 30);
    p.floating_gain = std::pow(10.0, s.floating_margin_db / 20.0);
    p.floating_window = uint32_t(samples(s.floating_window_s, rate_hz));
  }
  if (s.level_interval_s > 0) {
    check("level_interval_s (in samples)", double(samples(s.level_interval_s, rate_hz)), 32, 1u << 31);
    p.level_interval = uint32_t(samples(s.level_interval_s, rate_hz));
  }
  return p;
}

AeHitFeatures ae_hit_features(const AeHit& h, const AeSampleParams& p) noexcept {
  const double dt = 1.0 / p.rate_hz;
  const double vpu = p.volts_per_unit;
  AeHitFeatures f;
  f.amplitude_db = 20.0 * std::log10(double(h.peak) * vpu / 1e-6);
  f.threshold_db = 20.0 * std::log10(double(h.threshold) * vpu / 1e-6);
  f.rise_time_s = double(h.peak_frame - h.arrival_frame) * dt;
  f.duration_s = double(h.end_frame - h.arrival_frame) * dt;
  f.energy_eu = h.sum_sq * vpu * vpu * dt / 1e-14;
  f.signal_strength_pvs = h.sum_abs * vpu * dt / 1e-12;
  f.rms_v = std::sqrt(h.sum_sq / double(h.end_frame - h.arrival_frame + 1)) * vpu;
  return f;
}

double ae_level_rms_v(const AeLevel& l, const AeSampleParams& p) noexcept {
  return l.samples ? std::sqrt(l.sum_sq / l.samples) * p.volts_per_unit : 0.0;
}

double ae_level_asl_db(const AeLevel& l, const AeSampleParams& p) noexcept {
  const double mean_v = l.samples ? l.sum_abs / l.samples * p.volts_per_unit : 0.0;
  return mean_v > 0 ? 20.0 * std::log10(mean_v / 1e-6) : -HUGE_VAL;
}

AeHitDetector::AeHitDetector(const AeSampleParams& params, uint32_t channels) : p_(params), state_(channels) {
  reset();
}

void AeHitDetector::set_params(const AeSampleParams& p) noexcept {
  p_ = p;
  for (AeChannelState& s : state_)
    s.threshold = p_.floating_window ? std::max(s.threshold, p_.threshold) : p_.threshold;
}

void AeHitDetector::reset() noexcept {
  for (AeChannelState& s : state_) {
    s = AeChannelState{};
    s.threshold = p_.threshold;
  }
}

}  // namespace vigil
