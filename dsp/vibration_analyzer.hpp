// VibrationAnalyzer: the condition-monitoring figures of one window of acceleration samples:
// time statistics (RMS, peak, peak-to-peak, crest factor, kurtosis), velocity RMS over a band
// (10-1000 Hz for ISO 20816) from the spectrum, its ISO 20816 zone, and the envelope spectrum's
// amplitudes at bearing defect frequencies. Owns its FFT plans and scratch; analyze() is RT-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dsp/bearing.hpp"
#include "dsp/real_fft.hpp"
#include "dsp/vibration_stats.hpp"

namespace vigil {

// ISO 20816-3:2022 Annex A (unchanged from ISO 10816-3:2009 Tables A.1/A.2): zone boundaries
// A/B, B/C, C/D of broadband velocity RMS (10-1000 Hz, machines above 600 r/min), mm/s.
struct IsoZoneBounds {
  double ab = 0, bc = 0, cd = 0;  // all 0: no grading
  bool operator==(const IsoZoneBounds&) const = default;
};
// group 1: large machines (300 kW..50 MW); group 2: medium (15..300 kW). flexible: foundation.
IsoZoneBounds iso20816_3_bounds(int group, bool flexible_foundation);

struct VibrationSettings {
  double window_s = 1.0;
  double hop_s = 0.5;
  // Calibration: metrics in m/s^2 (velocity in mm/s) when both are set, else in sample units.
  double full_scale_v = 0;           // volts at the ADC for sample value 1.0
  double sensitivity_v_per_ms2 = 0;  // sensor sensitivity (config: mV/g or mV/(m/s^2))
  bool velocity = false;             // velocity RMS (needs the calibration)
  double velocity_lo_hz = 10, velocity_hi_hz = 1000;
  IsoZoneBounds zones;
  bool envelope = false;
  double envelope_lo_hz = 0, envelope_hi_hz = 0;  // band-pass before the envelope
  BearingFrequencies defects;                     // Hz; 0 = not reported
  bool operator==(const VibrationSettings&) const = default;
};

enum class VibrationMetric : uint8_t {
  kRms, kPeak, kPeakToPeak, kCrestFactor, kKurtosis, kVelocityRms, kBpfo, kBpfi, kBsf, kFtf
};
constexpr size_t kVibrationMetricCount = 10;
const char* to_string(VibrationMetric m) noexcept;
bool parse_vibration_metric(const std::string& name, VibrationMetric& out) noexcept;

struct VibrationMetrics {
  std::array<double, kVibrationMetricCount> value{};  // by VibrationMetric; NaN where not computed
  char zone = 0;  // 'A'..'D', 0 without grading
  double operator[](VibrationMetric m) const noexcept { return value[size_t(m)]; }
};

class VibrationAnalyzer {
 public:
  // Throws std::invalid_argument for settings that do not fit the rate (window under 64
  // samples, bands beyond Nyquist or under one bin, velocity without calibration...).
  VibrationAnalyzer(const VibrationSettings& settings, double rate_hz);

  uint32_t window() const noexcept { return window_; }  // samples (even)
  uint32_t hop() const noexcept { return hop_; }
  // x: window() samples in time order. RT-safe.
  void analyze(const float* x, VibrationMetrics& out) noexcept;
  // The same with the window's time statistics already known (e.g. merged from segment
  // moments); x is read only when needs_samples(), and may be null otherwise.
  void analyze(const VibrationStats& stats, const float* x, VibrationMetrics& out) noexcept;
  // Whether any metric needs the window's samples in order (velocity, envelope: spectra).
  bool needs_samples() const noexcept { return s_.velocity || s_.envelope; }

 private:
  double amplitude_near(const float* spectrum, double f_hz) const noexcept;

  VibrationSettings s_;
  double rate_hz_;
  uint32_t window_, hop_;
  double units_per_sample_ = 1;  // m/s^2 per sample unit, or 1
  RealFft fft_;
  std::vector<float> hann_, flattop_;
  double hann_power_ = 0, flattop_sum_ = 0;
  FftwBuffer time_, spectrum_, hilbert_spec_, band_, hilbert_;
};

}  // namespace vigil
