#include "dsp/vibration_analyzer.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "dsp/vibration_stats.hpp"
#include "dsp/window.hpp"

namespace vigil {
namespace {

constexpr const char* kMetricNames[kVibrationMetricCount] = {
    "rms", "peak", "peak_to_peak", "crest_factor", "kurtosis", "velocity_rms", "bpfo", "bpfi", "bsf", "ftf"};

[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("vibration: " + what); }

uint32_t even_samples(double t_s, double rate_hz) {
  const auto n = uint64_t(std::llround(t_s * rate_hz));
  return uint32_t(std::min<uint64_t>(n + (n % 2), 1u << 24));
}

}  // namespace

const char* to_string(VibrationMetric m) noexcept { return kMetricNames[size_t(m)]; }

bool parse_vibration_metric(const std::string& name, VibrationMetric& out) noexcept {
  for (size_t i = 0; i < kVibrationMetricCount; ++i)
    if (name == kMetricNames[i]) {
      out = VibrationMetric(i);
      return true;
    }
  return false;
}

IsoZoneBounds iso20816_3_bounds(int group, bool flexible) {
  if (group == 1) return flexible ? IsoZoneBounds{3.5, 7.1, 11.0} : IsoZoneBounds{2.3, 4.5, 7.1};
  if (group == 2) return flexible ? IsoZoneBounds{2.3, 4.5, 7.1} : IsoZoneBounds{1.4, 2.8, 4.5};
  reject("ISO 20816-3 machine group must be 1 or 2, got " + std::to_string(group));
}

VibrationAnalyzer::VibrationAnalyzer(const VibrationSettings& s, double rate_hz)
    : s_(s), rate_hz_(rate_hz), window_(even_samples(s.window_s, rate_hz)), hop_(uint32_t(std::llround(s.hop_s * rate_hz))),
      fft_(std::max<uint32_t>(window_, 2)) {
  if (window_ < 64) reject("window_s must cover at least 64 samples, got " + std::to_string(window_));
  if (hop_ < 1 || hop_ > window_) reject("hop_s must be 1 sample..window_s");
  const double nyquist = rate_hz / 2, bin = rate_hz / window_;
  const bool calibrated = s_.full_scale_v > 0 && s_.sensitivity_v_per_ms2 > 0;
  if (calibrated) units_per_sample_ = s_.full_scale_v / s_.sensitivity_v_per_ms2;
  if (s_.velocity) {
    if (!calibrated) reject("velocity needs full_scale_v and a sensor sensitivity");
    if (!(s_.velocity_lo_hz >= bin && s_.velocity_lo_hz < s_.velocity_hi_hz && s_.velocity_hi_hz <= nyquist))
      reject("the velocity band must lie between one bin (" + std::to_string(bin) + " Hz: lengthen window_s) and Nyquist");
  }
  if (s_.envelope) {
    if (!(s_.envelope_lo_hz > 0 && s_.envelope_lo_hz < s_.envelope_hi_hz && s_.envelope_hi_hz <= nyquist))
      reject("the envelope band must satisfy 0 < low < high <= Nyquist");
    for (double f : {s_.defects.bpfo, s_.defects.bpfi, s_.defects.bsf, s_.defects.ftf})
      if (f < 0 || f > nyquist) reject("defect frequencies must be 0..Nyquist");
  }
  const auto hann = make_window({WindowKind::kHann}, window_);
  const auto flat = make_window({WindowKind::kFlattop}, window_);
  hann_.assign(hann.begin(), hann.end());
  flattop_.assign(flat.begin(), flat.end());
  for (double w : hann) hann_power_ += w * w;
  for (double w : flat) flattop_sum_ += w;
  time_ = make_fftw_buffer(window_);
  band_ = make_fftw_buffer(window_);
  hilbert_ = make_fftw_buffer(window_);
  spectrum_ = make_fftw_buffer(2 * fft_.bins());
  hilbert_spec_ = make_fftw_buffer(2 * fft_.bins());
}

// Largest flat-top amplitude within one bin of f (the flat top reads true amplitude there).
double VibrationAnalyzer::amplitude_near(const float* spectrum, double f_hz) const noexcept {
  const double bin = rate_hz_ / window_;
  const auto k = long(std::lround(f_hz / bin));
  double best = 0;
  for (long j = std::max(1L, k - 1); j <= std::min(long(fft_.bins()) - 1, k + 1); ++j)
    best = std::max(best, std::hypot(double(spectrum[2 * j]), double(spectrum[2 * j + 1])));
  return 2.0 * best / flattop_sum_;
}

void VibrationAnalyzer::analyze(const float* x, VibrationMetrics& out) noexcept {
  analyze(vibration_stats(x, window_), x, out);
}

void VibrationAnalyzer::analyze(const VibrationStats& st, const float* x, VibrationMetrics& out) noexcept {
  out.value.fill(NAN);
  out.zone = 0;
  const double u = units_per_sample_;
  out.value[size_t(VibrationMetric::kRms)] = st.rms * u;
  out.value[size_t(VibrationMetric::kPeak)] = st.peak * u;
  out.value[size_t(VibrationMetric::kPeakToPeak)] = st.peak_to_peak * u;
  out.value[size_t(VibrationMetric::kCrestFactor)] = st.crest_factor;
  out.value[size_t(VibrationMetric::kKurtosis)] = st.kurtosis;
  const double bin = rate_hz_ / window_;
  float* spec = spectrum_.get();

  if (s_.velocity) {
    // Parseval on the Hann-windowed spectrum, each bin divided by (2 pi f)^2 (integration):
    // v_rms^2 = sum_k 2 |X_k|^2 / ((2 pi f_k)^2 N sum w^2).
    for (uint32_t i = 0; i < window_; ++i) time_[i] = x[i] * hann_[i];
    fft_.forward(time_.get(), spec);
    double sum = 0;
    const auto k0 = size_t(std::ceil(s_.velocity_lo_hz / bin)), k1 = size_t(std::floor(s_.velocity_hi_hz / bin));
    for (size_t k = k0; k <= k1 && k < fft_.bins(); ++k) {
      const double p = double(spec[2 * k]) * spec[2 * k] + double(spec[2 * k + 1]) * spec[2 * k + 1];
      const double w = 2 * std::numbers::pi * double(k) * bin;
      sum += 2 * p / (w * w);
    }
    const double v_mm_s = std::sqrt(sum / (double(window_) * hann_power_)) * u * 1000.0;
    out.value[size_t(VibrationMetric::kVelocityRms)] = v_mm_s;
    if (s_.zones.ab > 0)
      out.zone = v_mm_s < s_.zones.ab ? 'A' : v_mm_s < s_.zones.bc ? 'B' : v_mm_s < s_.zones.cd ? 'C' : 'D';
  }

  if (s_.envelope) {
    // Band-pass by zeroing bins outside the band; the band signal and its Hilbert transform
    // (each positive-frequency bin times -j) by two inverse real FFTs; envelope = |analytic|.
    fft_.forward(x, spec);
    const auto lo = size_t(std::ceil(s_.envelope_lo_hz / bin)), hi = size_t(std::floor(s_.envelope_hi_hz / bin));
    for (size_t k = 0; k < fft_.bins(); ++k) {
      if (k < lo || k > hi || k == 0 || k == fft_.bins() - 1) spec[2 * k] = spec[2 * k + 1] = 0;
    }
    for (size_t k = 0; k < fft_.bins(); ++k) {
      const float re = spec[2 * k], im = spec[2 * k + 1];
      hilbert_spec_[2 * k] = im;
      hilbert_spec_[2 * k + 1] = -re;
    }
    fft_.inverse(spec, band_.get());
    fft_.inverse(hilbert_spec_.get(), hilbert_.get());
    double mean = 0;
    for (uint32_t i = 0; i < window_; ++i) {
      const double e = std::hypot(double(band_[i]), double(hilbert_[i])) / window_;
      time_[i] = float(e);
      mean += e;
    }
    mean /= window_;
    for (uint32_t i = 0; i < window_; ++i) time_[i] = float((time_[i] - mean) * flattop_[i]);
    fft_.forward(time_.get(), spec);
    const VibrationMetric m[4] = {VibrationMetric::kBpfo, VibrationMetric::kBpfi, VibrationMetric::kBsf,
                                  VibrationMetric::kFtf};
    const double freqs[4] = {s_.defects.bpfo, s_.defects.bpfi, s_.defects.bsf, s_.defects.ftf};
    for (int i = 0; i < 4; ++i)
      if (freqs[i] > 0) out.value[size_t(m[i])] = amplitude_near(spec, freqs[i]) * u;
  }
}

}  // namespace vigil
