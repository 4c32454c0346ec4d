// Test input for the AE hit detectors: planar lanes of noise whose level varies by lane (some
// lanes hover near a 1.78e-3 threshold, so hits are frequent, long and often truncated) plus
// Poisson bursts of random amplitude.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "acquisition/synthetic_source.hpp"

namespace vigil::test {

// `lanes` lanes of `frames` samples at rate_hz, lane-major. seed: the noise and burst times;
// amplitude_seed: the bursts' amplitudes.
inline std::vector<float> ae_lanes(double rate_hz, uint32_t lanes, uint32_t frames, uint64_t seed,
                                   uint32_t amplitude_seed) {
  SyntheticSpec spec;
  spec.rate_hz = rate_hz;
  spec.channels = lanes;
  spec.format = SampleFormat::kFloat32;
  spec.seed = seed;
  std::mt19937 rng{amplitude_seed};
  for (uint32_t l = 0; l < lanes; ++l) {
    ChannelSignal s;
    s.noise_rms = 2e-4 * (1 + l % 5);  // threshold 1.78e-3: 9x .. 1.8x the noise RMS
    s.bursts.amplitude = 0.005 + 0.05 * std::uniform_real_distribution<double>(0, 1)(rng);
    s.bursts.freq_hz = 150e3;
    s.bursts.rise_s = 20e-6;
    s.bursts.decay_s = 60e-6;
    s.bursts.rate_hz = 500 + 300 * (l % 3);
    spec.signals.push_back(s);
  }
  SyntheticSource src(spec);
  std::vector<float> x(size_t(lanes) * frames);
  for (uint32_t l = 0; l < lanes; ++l) src.generate_channel(l, frames, x.data() + size_t(l) * frames);
  return x;
}

}  // namespace vigil::test
