// AE sources planted by the synthetic source (acquisition/planted_ae_sources): each emission
// reaches every sensor after distance / velocity (to the fraction of a sample), with the
// amplitude attenuation and spreading give it (checked against numbers worked by hand), on top
// of the channel's own signal; Poisson emissions at their rate, the same on every channel and
// whatever the chunk size.
#include "acquisition/planted_ae_sources.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>
#include <vector>

#include "../support/read_frames.hpp"
#include "acquisition/synthetic_source.hpp"

namespace vigil {
namespace {

constexpr double kRate = 2e6;

PlantedAeSpec plate() {
  PlantedAeSpec p;
  p.sensors = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}};
  p.velocity_m_s = 3000;
  p.attenuation_db_m = 10;
  p.spreading = AeSpreading::kCylindrical;
  p.reference_m = 0.1;
  p.freq_hz = 150e3;
  p.rise_s = 2e-6;
  p.decay_s = 20e-6;
  return p;
}

SyntheticSpec source_with(const PlantedAeSpec& p, double noise_rms, uint32_t chunk = 4096) {
  SyntheticSpec s;
  s.rate_hz = kRate;
  s.channels = 4;
  s.format = SampleFormat::kFloat32;
  s.chunk_frames = chunk;
  s.rate_factor = 0;
  s.seed = 5;
  s.signals.resize(1);
  s.signals[0].noise_rms = noise_rms;
  s.ae_sources = p;
  return s;
}

using test::read_frames;

TEST(PlantedAeSources, AmplitudeFallsWithAttenuationAndSpreadingAsWorkedByHand) {
  PlantedAeSpec p = plate();
  p.sources = {{0.5, 0.5, 0, 0.2, 0, {0.001}}};
  const PlantedAeSources s(p, kRate, 4, 1);
  // r = 1 m from 0.1 m: cylindrical sqrt(0.1 / 1) = 0.316228, 10 dB/m over 0.9 m = 10^(-0.45) = 0.354813.
  EXPECT_NEAR(s.amplitude_at(0.2, 1.0), 0.2 * 0.316228 * 0.354813, 1e-6);
  EXPECT_DOUBLE_EQ(s.amplitude_at(0.2, 0.05), 0.2);  // nearer than the reference: as given
  p.spreading = AeSpreading::kSpherical;
  p.attenuation_db_m = 0;
  EXPECT_NEAR(PlantedAeSources(p, kRate, 4, 1).amplitude_at(0.2, 0.4), 0.05, 1e-12);
  p.spreading = AeSpreading::kNone;
  p.attenuation_db_m = 20;
  EXPECT_NEAR(PlantedAeSources(p, kRate, 4, 1).amplitude_at(0.2, 1.1), 0.02, 1e-12);
}

// Every sample of every channel: the burst at the exact time since its arrival at that sensor,
// on the channel's noise (the same noise as without the source), to float precision.
TEST(PlantedAeSources, EachEmissionReachesEverySensorAfterItsPathToTheFractionOfASample) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> inside(0.05, 0.95), when(0.001, 0.004);
  PlantedAeSpec p = plate();
  const double x = inside(rng), y = inside(rng), t0 = when(rng), amp = 0.3;
  p.sources = {{x, y, 0, amp, 0, {t0}}};
  SCOPED_TRACE("source at " + std::to_string(x) + ", " + std::to_string(y) + " emitting at " + std::to_string(t0));
  SyntheticSource with(source_with(p, 0.001));
  SyntheticSpec plain = source_with(p, 0.001);
  plain.ae_sources.reset();
  SyntheticSource without(plain);
  const size_t n = 12000;  // 6 ms
  const auto a = read_frames(with, n), b = read_frames(without, n);
  for (size_t c = 0; c < 4; ++c) {
    const double r = std::hypot(x - p.sensors[c].x_m, y - p.sensors[c].y_m);
    const double onset = (t0 + r / 3000) * kRate;  // frames, with its fraction
    // Nearer than the reference distance (0.1 m) a sensor hears the amplitude as given: a source
    // drawn within 0.1 m of a corner (about 1 run in 200) once failed here against the far law.
    const double a_c = r <= 0.1 ? amp : amp * std::sqrt(0.1 / r) * std::pow(10.0, -10 * (r - 0.1) / 20);
    size_t first = n;
    for (size_t i = 0; i < n; ++i) {
      const double t = double(i) - onset;  // frames since the arrival
      double burst = 0;
      if (t >= 0 && t < (2e-6 + 200e-6) * kRate) {
        const double env = t < 4 ? t / 4 : std::exp(-(t - 4) / 40);
        burst = a_c * env * std::sin(2 * std::numbers::pi * 150e3 * t / kRate);
      }
      ASSERT_NEAR(a[c][i], b[c][i] + burst, 2e-6) << "channel " << c << " frame " << i;
      if (first == n && a[c][i] != b[c][i]) first = i;
    }
    // The first sample after the arrival (a burst starts at sin 0: one a hair later may not yet
    // show in float).
    EXPECT_GE(first, size_t(std::ceil(onset))) << "channel " << c;
    EXPECT_LE(first, size_t(std::ceil(onset)) + 1) << "channel " << c;
  }
  EXPECT_EQ(with.counts().at(0).second, 1u);
}

TEST(PlantedAeSources, PoissonEmissionsComeAtTheirRateOnEveryChannelWhateverTheChunkSize) {
  PlantedAeSpec p = plate();
  p.sources = {{0.3, 0.6, 0, 0.3, 100, {}}, {0.8, 0.1, 0, 0.2, 0, {0.0005, 0.0415}}};
  SyntheticSource a(source_with(p, 0.0, 4096)), b(source_with(p, 0.0, 1000));
  const size_t n = 2'000'000;  // 1 s: 100 expected from the first, 2 from the second
  const auto xa = read_frames(a, n), xb = read_frames(b, n);
  EXPECT_EQ(xa, xb);
  const uint64_t emissions = a.counts().at(0).second;
  EXPECT_EQ(b.counts().at(0).second, emissions);
  // 99.99 % of Poisson(100) draws lie within 63..141 (plus the two at given times).
  EXPECT_GE(emissions, 65u);
  EXPECT_LE(emissions, 143u);
  // Without noise, each emission's burst starts on every channel after silence: onsets counted
  // per channel (a burst lasts 202 us; one that comes within 227 us of the one before merges
  // with it: 2 % of them, about 2; allowed 10).
  for (size_t c = 0; c < 4; ++c) {
    uint64_t onsets = 0;
    size_t quiet = 50;
    for (float v : xa[c]) {
      if (v != 0.0f && quiet >= 50) ++onsets;
      quiet = v == 0.0f ? quiet + 1 : 0;
    }
    EXPECT_LE(onsets, emissions) << "channel " << c;
    EXPECT_GE(onsets + 10, emissions) << "channel " << c;
  }
}

TEST(PlantedAeSources, RejectsBadSpecs) {
  PlantedAeSpec p = plate();
  p.sources = {{0.5, 0.5, 0, 0.1, 1, {}}};
  EXPECT_THROW(PlantedAeSources(p, kRate, 3, 1), std::invalid_argument);  // 4 sensors, 3 channels
  PlantedAeSpec never = p;
  never.sources[0].rate_hz = 0;
  EXPECT_THROW(PlantedAeSources(never, kRate, 4, 1), std::invalid_argument);
  PlantedAeSpec slow = p;
  slow.velocity_m_s = 0;
  EXPECT_THROW(PlantedAeSources(slow, kRate, 4, 1), std::invalid_argument);
  PlantedAeSpec high = p;
  high.freq_hz = 1.5e6;
  EXPECT_THROW(PlantedAeSources(high, kRate, 4, 1), std::invalid_argument);
  PlantedAeSpec none = p;
  none.sources.clear();
  EXPECT_THROW(PlantedAeSources(none, kRate, 4, 1), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
