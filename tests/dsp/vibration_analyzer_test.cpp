// Vibration analysis against closed forms: velocity RMS of acceleration sines (on and between
// bins, in and out of the 10-1000 Hz band) and their ISO 20816-3 zones; envelope amplitudes of an
// amplitude-modulated carrier at a bearing defect frequency; bearing kinematics of a 6205.
#include "dsp/vibration_analyzer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace vigil {
namespace {

constexpr double kRate = 25600;
constexpr double kG = 9.80665;
constexpr double kPi = std::numbers::pi;

VibrationSettings calibrated() {
  VibrationSettings s;
  s.window_s = 1.0;
  s.hop_s = 0.5;
  s.full_scale_v = 10;                      // +-10 V ADC
  s.sensitivity_v_per_ms2 = 0.100 / kG;     // 100 mV/g accelerometer
  s.velocity = true;
  s.zones = iso20816_3_bounds(2, false);    // 1.4 / 2.8 / 4.5 mm/s
  return s;
}

// Samples (ADC full-scale units) of an acceleration sine whose velocity RMS is v_mm_s at f_hz,
// plus white noise 60 dB under it.
std::vector<float> accel_sine(double v_mm_s, double f_hz, uint32_t n, uint32_t seed) {
  const double a_peak = v_mm_s * 1e-3 * std::sqrt(2.0) * 2 * kPi * f_hz;  // m/s^2
  const double volts_per_ms2 = 0.100 / kG, per_unit = 10.0;
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0, 1e-3 * a_peak / std::sqrt(2.0));
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i)
    x[i] = float((a_peak * std::sin(2 * kPi * f_hz * i / kRate + 0.4) + g(rng)) * volts_per_ms2 / per_unit);
  return x;
}

TEST(VibrationAnalyzer, VelocityRmsOfASineAndItsIsoZone) {
  VibrationAnalyzer a(calibrated(), kRate);
  ASSERT_EQ(a.window(), 25600u);
  struct Case {
    double v, f;
    char zone;
  };
  for (const Case c : {Case{1.0, 50, 'A'}, Case{2.0, 77.3, 'B'}, Case{3.5, 24.6, 'C'}, Case{6.0, 400.2, 'D'},
                       Case{2.2, 12.5, 'B'}, Case{3.0, 980, 'C'}}) {
    SCOPED_TRACE(c.f);
    const auto x = accel_sine(c.v, c.f, a.window(), uint32_t(c.f));
    VibrationMetrics m;
    a.analyze(x.data(), m);
    EXPECT_NEAR(m[VibrationMetric::kVelocityRms], c.v, 0.01 * c.v);
    EXPECT_EQ(m.zone, c.zone);
    // Acceleration RMS in m/s^2: v_rms * 2 pi f.
    EXPECT_NEAR(m[VibrationMetric::kRms], c.v * 1e-3 * 2 * kPi * c.f, 0.002 * c.v * 1e-3 * 2 * kPi * c.f);
    EXPECT_NEAR(m[VibrationMetric::kCrestFactor], std::sqrt(2.0), 0.01);
    EXPECT_NEAR(m[VibrationMetric::kKurtosis], 1.5, 0.01);
    EXPECT_TRUE(std::isnan(m[VibrationMetric::kBpfo]));  // no envelope configured
  }
}

TEST(VibrationAnalyzer, VelocityIgnoresWhatIsOutsideTheBand) {
  VibrationAnalyzer a(calibrated(), kRate);
  for (const double f : {3.0, 2000.0, 6000.0}) {
    const auto x = accel_sine(5.0, f, a.window(), 9);
    VibrationMetrics m;
    a.analyze(x.data(), m);
    EXPECT_LT(m[VibrationMetric::kVelocityRms], 0.02 * 5.0) << f;
  }
}

TEST(VibrationAnalyzer, EnvelopeReadsTheModulationAtTheDefectFrequency) {
  // Bearing 6205 at 29.95 Hz (1797 r/min): BPFO 107.36 Hz. Carrier 5 kHz (a resonance the
  // impacts excite), amplitude A modulated by m at BPFO; band 3-8 kHz.
  const BearingFrequencies f = bearing_frequencies({9, 7.94, 39.04, 0}, 29.95);
  VibrationSettings s = calibrated();
  s.velocity = false;
  s.envelope = true;
  s.envelope_lo_hz = 3000;
  s.envelope_hi_hz = 8000;
  s.defects = f;
  s.full_scale_v = 0;  // sample units: the amplitudes read directly
  VibrationAnalyzer an(s, kRate);
  const double a = 0.2, m = 0.5;
  std::mt19937 rng(4);
  std::normal_distribution<double> g(0, 0.01);
  std::vector<float> x(an.window());
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = double(i) / kRate;
    x[i] = float(a * (1 + m * std::cos(2 * kPi * f.bpfo * t)) * std::sin(2 * kPi * 5000 * t) +
                 0.3 * std::sin(2 * kPi * 29.95 * t) + g(rng));  // shaft 1x outside the band
  }
  VibrationMetrics out;
  an.analyze(x.data(), out);
  EXPECT_NEAR(out[VibrationMetric::kBpfo], a * m, 0.03 * a * m);
  for (const VibrationMetric other : {VibrationMetric::kBpfi, VibrationMetric::kBsf, VibrationMetric::kFtf})
    EXPECT_LT(out[other], 0.05 * a * m) << to_string(other);
  EXPECT_TRUE(std::isnan(out[VibrationMetric::kVelocityRms]));
}

TEST(VibrationAnalyzer, BearingKinematicsOfA6205) {
  // Published multiples of shaft speed for the 6205 (9 balls, 7.94 mm, pitch 39.04 mm):
  // BPFO 3.585, BPFI 5.415, BSF 2.357, FTF 0.398.
  const BearingFrequencies f = bearing_frequencies({9, 7.94, 39.04, 0}, 1.0);
  EXPECT_NEAR(f.bpfo, 3.585, 0.001);
  EXPECT_NEAR(f.bpfi, 5.415, 0.001);
  EXPECT_NEAR(f.bsf, 2.357, 0.001);
  EXPECT_NEAR(f.ftf, 0.398, 0.001);
}

TEST(VibrationAnalyzer, RejectsSettingsThatDoNotFitTheRate) {
  VibrationSettings s = calibrated();
  s.window_s = 0.001;  // 26 samples
  EXPECT_THROW(VibrationAnalyzer(s, kRate), std::invalid_argument);
  s = calibrated();
  s.window_s = 0.05;  // 20 Hz bins: the 10 Hz edge is under one bin
  EXPECT_THROW(VibrationAnalyzer(s, kRate), std::invalid_argument);
  s = calibrated();
  s.sensitivity_v_per_ms2 = 0;
  EXPECT_THROW(VibrationAnalyzer(s, kRate), std::invalid_argument);
  EXPECT_THROW(iso20816_3_bounds(3, false), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
