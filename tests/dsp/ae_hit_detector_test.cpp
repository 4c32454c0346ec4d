// The AE hit engine against ground truth from the synthetic source's burst model: every planted
// burst found once, arrival/end within one sample, amplitude within 0.1 dB, rise and duration
// within one sample period; chunking does not matter; HDT, HLT, PDT, maximum duration and the
// floating threshold behave as defined; bounded noise 6 dB under the threshold never makes a hit.
#include "dsp/ae_hit_detector.hpp"

#include <gtest/gtest.h>

#include "../support/tolerances.hpp"

#include <cmath>
#include <numbers>
#include <random>

#include "acquisition/synthetic_source.hpp"

namespace vigil {
namespace {

constexpr double kRate = 2e6;

AeHitSettings rig_settings() {
  AeHitSettings s;
  s.threshold_db = 45;       // 177.8 uV at the sensor
  s.full_scale_v = 10;       // +-10 V ADC
  s.preamp_gain_db = 40;     // 0.1 V at the sensor per unit
  s.level_interval_s = 0;
  return s;
}

struct Detected {
  std::vector<AeHit> hits;
  std::vector<AeLevel> levels;
};

Detected detect(const AeSampleParams& p, const std::vector<float>& x, const std::vector<uint32_t>& chunks) {
  AeHitDetector d(p, 1);
  Detected r;
  size_t at = 0;
  for (size_t k = 0; at < x.size(); ++k) {
    const auto n = uint32_t(std::min<size_t>(chunks[k % chunks.size()], x.size() - at));
    d.push(0, x.data() + at, n, at, [&](const AeHit& h) { r.hits.push_back(h); },
           [&](const AeLevel& l) { r.levels.push_back(l); });
    at += n;
  }
  return r;
}

std::vector<float> synthesize(const BurstSpec& bursts, double noise_rms, double seconds, uint64_t seed = 7) {
  SyntheticSpec spec;
  spec.rate_hz = kRate;
  spec.channels = 1;
  spec.format = SampleFormat::kFloat32;
  spec.seed = seed;
  ChannelSignal sig;
  sig.noise_rms = noise_rms;
  sig.bursts = bursts;
  spec.signals = {sig};
  SyntheticSource src(spec);
  std::vector<float> x(size_t(seconds * kRate));
  src.generate_channel(0, uint32_t(x.size()), x.data());
  return x;
}

// The burst model, evaluated on its own (the test's independent ground truth).
double model(const BurstSpec& b, double k) {
  const double rise = b.rise_s * kRate;
  const double env = double(k) < rise ? double(k) / rise : std::exp(-(double(k) - rise) / (b.decay_s * kRate));
  return b.amplitude * env * std::sin(2 * std::numbers::pi * b.freq_hz * double(k) / kRate);
}

struct Truth {
  uint64_t arrival = 0, peak = 0, end = 0;
  double peak_abs = 0;
  uint32_t counts = 0;
};

Truth truth(const BurstSpec& b, uint64_t onset, float thr) {
  Truth t;
  bool open = false;
  double prev = 0;
  const auto len = uint64_t((b.rise_s + 10 * b.decay_s) * kRate);
  for (uint64_t k = 0; k < len; ++k) {
    const double v = model(b, double(k));
    if (std::fabs(v) >= thr) {
      if (!open) t.arrival = onset + k;
      open = true;
      t.end = onset + k;
      if (v >= thr && prev < thr) ++t.counts;
      if (std::fabs(v) > t.peak_abs) {
        t.peak_abs = std::fabs(v);
        t.peak = onset + k;
      }
    }
    prev = v;
  }
  return t;
}

BurstSpec planted() {
  BurstSpec b;
  b.amplitude = 0.1;      // 80 dB_AE
  b.freq_hz = 50e3;  // 40 samples a cycle: the sampled peak is within 0.03 dB of the true one
  b.rise_s = 50e-6;
  b.decay_s = 100e-6;
  b.times_s = {0.0021, 0.0073, 0.0125, 0.0207, 0.0311, 0.0388};
  return b;
}

TEST(AeHitDetector, FindsEveryPlantedBurstWithItsFeatures) {
  const AeSampleParams p = ae_sample_params(rig_settings(), kRate);
  ASSERT_NEAR(p.volts_per_unit, 0.1, test::kDoubleFormulaRel);
  const BurstSpec b = planted();
  const auto x = synthesize(b, 1e-6, 0.045);
  const Detected r = detect(p, x, {4096});
  ASSERT_EQ(r.hits.size(), b.times_s.size());
  for (size_t i = 0; i < b.times_s.size(); ++i) {
    const AeHit& h = r.hits[i];
    const Truth t = truth(b, uint64_t(std::llround(b.times_s[i] * kRate)), p.threshold);
    SCOPED_TRACE(i);
    EXPECT_LE(std::llabs(int64_t(h.arrival_frame) - int64_t(t.arrival)), 1);
    EXPECT_LE(std::llabs(int64_t(h.end_frame) - int64_t(t.end)), 1);
    const AeHitFeatures f = ae_hit_features(h, p);
    EXPECT_NEAR(f.amplitude_db, 20 * std::log10(t.peak_abs * 0.1 / 1e-6), 0.1);
    // Against the model's continuous-time peak (a 1/100-sample grid around the sampled one).
    double peak = 0;
    for (double k = -2; k <= 2; k += 0.01) peak = std::max(peak, std::fabs(model(b, double(t.peak) - b.times_s[i] * kRate + k)));
    EXPECT_NEAR(f.amplitude_db, 20 * std::log10(peak * 0.1 / 1e-6), 0.1);
    EXPECT_NEAR(f.rise_time_s, double(t.peak - t.arrival) / kRate, 1.0 / kRate);
    EXPECT_NEAR(f.duration_s, double(t.end - t.arrival) / kRate, 1.0 / kRate);
    EXPECT_LE(std::abs(int(h.counts) - int(t.counts)), 1);
    EXPECT_FALSE(h.truncated);
    EXPECT_NEAR(f.threshold_db, 45.0, 1e-4);
    // Energy, signal strength and RMS against a direct double sum over the hit's samples.
    double sq = 0, ab = 0;
    for (uint64_t n = h.arrival_frame; n <= h.end_frame; ++n) {
      sq += double(x[n]) * x[n];
      ab += std::fabs(double(x[n]));
    }
    const double dt = 1 / kRate;
    EXPECT_NEAR(f.energy_eu, sq * 0.01 * dt / 1e-14, test::kDoubleChainRel * f.energy_eu);
    EXPECT_NEAR(f.signal_strength_pvs, ab * 0.1 * dt / 1e-12, test::kDoubleChainRel * f.signal_strength_pvs);
    EXPECT_NEAR(f.rms_v, std::sqrt(sq / double(h.end_frame - h.arrival_frame + 1)) * 0.1, test::kDoubleChainRel);
  }
}

TEST(AeHitDetector, ChunkingDoesNotChangeTheHits) {
  const AeSampleParams p = ae_sample_params(rig_settings(), kRate);
  BurstSpec b = planted();
  // Onsets exactly on and just around multiples of 4096 samples (chunk boundaries below).
  b.times_s = {4096 * 3 / kRate, (4096 * 9 - 1) / kRate, (4096 * 15 + 1) / kRate, 0.0391};
  const auto x = synthesize(b, 3e-4, 0.045, 11);
  const Detected whole = detect(p, x, {uint32_t(x.size())});
  ASSERT_EQ(whole.hits.size(), 4u);
  std::mt19937 rng(5);
  std::vector<uint32_t> sizes;
  for (int i = 0; i < 64; ++i) sizes.push_back(uint32_t(1 + rng() % 9000));
  for (const auto& chunks : {std::vector<uint32_t>{4096}, std::vector<uint32_t>{1}, sizes}) {
    const Detected r = detect(p, x, chunks);
    ASSERT_EQ(r.hits.size(), whole.hits.size());
    for (size_t i = 0; i < r.hits.size(); ++i) {
      EXPECT_EQ(r.hits[i].arrival_frame, whole.hits[i].arrival_frame);
      EXPECT_EQ(r.hits[i].peak_frame, whole.hits[i].peak_frame);
      EXPECT_EQ(r.hits[i].end_frame, whole.hits[i].end_frame);
      EXPECT_EQ(r.hits[i].counts, whole.hits[i].counts);
      EXPECT_EQ(r.hits[i].sum_sq, whole.hits[i].sum_sq);  // same order of additions
    }
  }
}

// With a fixed threshold the detector takes quiet stretches (idle up to a crossing, locked out up
// to its end) in one step. Pushed one sample at a time, every stretch is one sample long: the
// per-sample run, whose level sums add one sample at a time. Any other chunking must give the same
// hits, and level sums within double rounding, with lockouts and level intervals ending inside and
// at the edges of quiet stretches.
TEST(AeHitDetector, QuietStretchesInOneStepEqualTheSampleBySampleRun) {
  AeHitSettings s = rig_settings();
  s.level_interval_s = 0.0005005;  // 1001 samples: intervals end anywhere in a stretch
  s.hlt_s = 0.0002;
  s.max_duration_s = 0.001;
  const AeSampleParams p = ae_sample_params(s, kRate);
  ASSERT_EQ(p.floating_window, 0u);
  BurstSpec b = planted();
  b.times_s = {0.0021, 0.0028, 0.0073, 0.0074, 0.0125, 0.0207, 0.0311, 0.0388};  // some in lockouts
  const auto bursts = synthesize(b, 3e-4, 0.045, 17);
  // A tone far above the threshold in 5 ms stretches: hits cut at the maximum duration, each
  // lockout ending on a sample that opens the next hit at once.
  std::vector<float> tone(90000);
  for (size_t i = 0; i < tone.size(); ++i) tone[i] = (i / 10000) % 2 ? 0.0f : 0.05f * std::sin(0.157f * float(i));
  for (const std::vector<float>* x : {&bursts, static_cast<const std::vector<float>*>(&tone)}) {
    std::mt19937 rng(8);
    std::vector<uint32_t> sizes;
    for (int i = 0; i < 64; ++i) sizes.push_back(uint32_t(1 + rng() % 3000));
    const Detected want = detect(p, *x, {1});
    ASSERT_GE(want.hits.size(), 6u);
    ASSERT_EQ(want.levels.size(), x->size() / 1001);
    for (const auto& chunks : {std::vector<uint32_t>{uint32_t(x->size())}, std::vector<uint32_t>{1001}, sizes}) {
      const Detected got = detect(p, *x, chunks);
      ASSERT_EQ(got.hits.size(), want.hits.size());
      for (size_t i = 0; i < got.hits.size(); ++i) {
        EXPECT_EQ(got.hits[i].arrival_frame, want.hits[i].arrival_frame) << i;
        EXPECT_EQ(got.hits[i].peak_frame, want.hits[i].peak_frame) << i;
        EXPECT_EQ(got.hits[i].end_frame, want.hits[i].end_frame) << i;
        EXPECT_EQ(got.hits[i].counts, want.hits[i].counts) << i;
        EXPECT_EQ(got.hits[i].counts_to_peak, want.hits[i].counts_to_peak) << i;
        EXPECT_EQ(got.hits[i].peak, want.hits[i].peak) << i;
        EXPECT_EQ(got.hits[i].sum_sq, want.hits[i].sum_sq) << i;  // a hit's sums are per sample in both
        EXPECT_EQ(got.hits[i].truncated, want.hits[i].truncated) << i;
      }
      ASSERT_EQ(got.levels.size(), want.levels.size());
      for (size_t i = 0; i < got.levels.size(); ++i) {
        EXPECT_EQ(got.levels[i].end_frame, want.levels[i].end_frame) << i;
        EXPECT_EQ(got.levels[i].samples, want.levels[i].samples) << i;
        EXPECT_NEAR(got.levels[i].sum_sq, want.levels[i].sum_sq, test::kDoubleSumRel * want.levels[i].sum_sq) << i;
        EXPECT_NEAR(got.levels[i].sum_abs, want.levels[i].sum_abs, test::kDoubleSumRel * want.levels[i].sum_abs) << i;
      }
    }
  }
}

// The quiet-stretch helpers on their own: the first crossing at every position (and none, and a
// NaN, which is never at or above), and the sums against plain ones, for lengths 0..100.
TEST(AeHitDetector, QuietStretchHelpers) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-0.9f, 0.9f);
  for (uint32_t n = 0; n <= 100; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = u(rng);
    EXPECT_EQ(AeHitDetector::first_at_or_above(x.data(), n, 1.0f), n);
    for (uint32_t at = 0; at < n; ++at) {
      std::vector<float> y = x;
      y[at] = at % 2 ? -1.0f : 1.0f;  // exactly at the threshold, either sign
      if (at > 0) y[at - 1] = std::nanf("");
      EXPECT_EQ(AeHitDetector::first_at_or_above(y.data(), n, 1.0f), at) << n << " " << at;
    }
    double sq = 0.5, ab = 0.25, want_sq = 0.5, want_ab = 0.25;
    for (float v : x) {
      want_sq += double(v) * v;
      want_ab += std::fabs(double(v));
    }
    AeHitDetector::add_sums(x.data(), n, sq, ab);
    // Tighter than the table's sums: the vector lanes' order differs, products are not fused
    // (-ffp-contract=off, docs/JETSON.md); a fused multiply-add in either sum breaks this bound.
    EXPECT_NEAR(sq, want_sq, 1e-14) << n;
    EXPECT_NEAR(ab, want_ab, 1e-14) << n;
  }
}

TEST(AeHitDetector, BoundedNoiseSixDbUnderThresholdMakesNoHit) {
  AeHitSettings s = rig_settings();
  s.level_interval_s = 0.5;
  const AeSampleParams p = ae_sample_params(s, kRate);
  AeHitDetector d(p, 1);
  std::mt19937 rng(99);
  const float peak = p.threshold / 2;  // -6.02 dB
  std::uniform_real_distribution<float> u(-peak, peak);
  std::vector<float> x(1 << 20);
  size_t hits = 0, levels = 0;
  double sq = 0, ab = 0;
  for (uint64_t at = 0; at < 10'000'000; at += x.size()) {
    const auto n = uint32_t(std::min<uint64_t>(x.size(), 10'000'000 - at));
    for (uint32_t i = 0; i < n; ++i) {
      x[i] = u(rng);
      if (at + i < 1'000'000) {
        sq += double(x[i]) * x[i];
        ab += std::fabs(x[i]);
      }
    }
    d.push(0, x.data(), n, at, [&](const AeHit&) { ++hits; }, [&](const AeLevel& l) {
      if (levels++ == 0) {  // the first 0.5 s interval against a direct sum
        EXPECT_EQ(l.end_frame, 999'999u);
        EXPECT_NEAR(ae_level_rms_v(l, p), std::sqrt(sq / 1e6) * 0.1, test::kDoubleFormulaRel);
        EXPECT_NEAR(ae_level_asl_db(l, p), 20 * std::log10(ab / 1e6 * 0.1 / 1e-6), test::kDoubleChainRel);
      }
    });
  }
  EXPECT_EQ(hits, 0u);
  EXPECT_EQ(levels, 10u);
}

BurstSpec short_burst(double t0, double t1) {
  BurstSpec b;
  b.amplitude = 0.05;
  b.freq_hz = 200e3;
  b.decay_s = 20e-6;  // above threshold for ~80 us
  b.times_s = {t0, t1};
  return b;
}

TEST(AeHitDetector, HitDefinitionTimeMergesOrSplitsBursts) {
  AeHitSettings s = rig_settings();
  s.hdt_s = 800e-6;
  s.hlt_s = 0;
  const AeSampleParams p = ae_sample_params(s, kRate);
  // Second burst 500 us after the first: within HDT of its last crossing: one hit spanning both.
  const BurstSpec near = short_burst(0.001, 0.0015);
  const Detected merged = detect(p, synthesize(near, 1e-6, 0.004), {1000});
  ASSERT_EQ(merged.hits.size(), 1u);
  const Truth t2 = truth(near, 3000, p.threshold);
  EXPECT_LE(std::llabs(int64_t(merged.hits[0].end_frame) - int64_t(t2.end)), 1);
  // 1200 us apart: the gap after the first burst's last crossing exceeds HDT: two hits.
  const BurstSpec far = short_burst(0.001, 0.0022);
  const Detected split = detect(p, synthesize(far, 1e-6, 0.004), {1000});
  ASSERT_EQ(split.hits.size(), 2u);
  const Truth f1 = truth(far, 2000, p.threshold);
  EXPECT_LE(std::llabs(int64_t(split.hits[0].end_frame) - int64_t(f1.end)), 1);
}

TEST(AeHitDetector, HitLockoutTimeHidesABurstInsideIt) {
  AeHitSettings s = rig_settings();
  s.hdt_s = 100e-6;
  s.hlt_s = 1000e-6;
  // First burst ends (last crossing) near 1.08 ms; HDT to 1.18 ms; lockout to 2.18 ms. The second
  // burst at 1.5 ms lies wholly inside the lockout.
  const BurstSpec b = short_burst(0.001, 0.0015);
  const Detected locked = detect(ae_sample_params(s, kRate), synthesize(b, 1e-6, 0.004), {777});
  EXPECT_EQ(locked.hits.size(), 1u);
  s.hlt_s = 0;
  const Detected free = detect(ae_sample_params(s, kRate), synthesize(b, 1e-6, 0.004), {777});
  ASSERT_EQ(free.hits.size(), 2u);
  const Truth t = truth(b, 3000, ae_sample_params(s, kRate).threshold);
  EXPECT_LE(std::llabs(int64_t(free.hits[1].arrival_frame) - int64_t(t.arrival)), 1);
}

TEST(AeHitDetector, PeakDefinitionTimeFixesTheEarlyPeak) {
  // Two bursts 300 us apart merged into one hit (HDT 800 us); the second is 6 dB louder. With PDT
  // 100 us the peak is fixed in the first burst; with PDT 1 ms it moves to the second.
  AeHitSettings s = rig_settings();
  s.hlt_s = 0;
  BurstSpec b = short_burst(0.001, 0.0013);
  std::vector<float> x = synthesize(b, 1e-6, 0.004);
  for (size_t n = 2600; n < x.size(); ++n) x[n] += float(model(b, double(n - 2600)));  // doubles the second
  s.pdt_s = 100e-6;
  const Detected early = detect(ae_sample_params(s, kRate), x, {512});
  s.pdt_s = 1e-3;
  const Detected late = detect(ae_sample_params(s, kRate), x, {512});
  ASSERT_EQ(early.hits.size(), 1u);
  ASSERT_EQ(late.hits.size(), 1u);
  EXPECT_LT(early.hits[0].peak_frame, 2600u);
  EXPECT_GE(late.hits[0].peak_frame, 2600u);
  EXPECT_NEAR(20 * std::log10(late.hits[0].peak / early.hits[0].peak), 6.02, 0.2);
  EXPECT_LT(early.hits[0].counts_to_peak, late.hits[0].counts_to_peak);
  EXPECT_EQ(early.hits[0].counts, late.hits[0].counts);
}

TEST(AeHitDetector, MaximumDurationCutsAContinuousSignal) {
  AeHitSettings s = rig_settings();
  s.max_duration_s = 1e-3;
  s.hlt_s = 100e-6;
  const AeSampleParams p = ae_sample_params(s, kRate);
  std::vector<float> x(20000);
  for (size_t n = 0; n < x.size(); ++n) x[n] = float(0.01 * std::sin(2 * std::numbers::pi * 100e3 * double(n) / kRate + 0.3));
  const Detected r = detect(p, x, {3000});
  ASSERT_GE(r.hits.size(), 2u);
  EXPECT_TRUE(r.hits[0].truncated);
  EXPECT_EQ(r.hits[0].arrival_frame, 0u);
  EXPECT_LT(r.hits[0].end_frame, p.max_duration);
  EXPECT_GE(r.hits[0].end_frame + 20, p.max_duration);  // the last crossing within a cycle of the cut
  // The next hit opens at the first crossing after max_duration + HLT.
  EXPECT_GE(r.hits[1].arrival_frame, p.max_duration + p.hlt);
  EXPECT_LT(r.hits[1].arrival_frame, p.max_duration + p.hlt + 20);
}

TEST(AeHitDetector, FloatingThresholdFollowsTheNoise) {
  AeHitSettings s = rig_settings();
  s.threshold_db = 20;          // fixed floor far below the noise
  s.floating_margin_db = 20;    // 10x the mean |V|
  s.floating_window_s = 0.001;  // 2000 samples
  const AeSampleParams p = ae_sample_params(s, kRate);
  ASSERT_EQ(p.floating_window, 2000u);
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0, 2e-3f);
  std::vector<float> x(9000);
  for (float& v : x) v = g(rng);
  AeHitDetector d(p, 1);
  size_t hits = 0;
  d.push(0, x.data(), 7777, 0, [&](const AeHit&) { ++hits; }, [](const AeLevel&) {});
  EXPECT_GT(hits, 0u);  // before the first window ends the fixed 20 dB threshold is in the noise
  double sum = 0;
  for (size_t n = 4000; n < 6000; ++n) sum += std::fabs(x[n]);
  EXPECT_EQ(d.state(0).threshold, float(sum / 2000 * 10.0));
  EXPECT_NEAR(d.state(0).threshold, 10 * 2e-3 * std::sqrt(2 / std::numbers::pi), 1e-3);
}

TEST(AeHitDetector, RejectsSettingsOutOfRange) {
  AeHitSettings s = rig_settings();
  s.hdt_s = -1;
  EXPECT_THROW(ae_sample_params(s, kRate), std::invalid_argument);
  s = rig_settings();
  s.floating_margin_db = 6;
  s.floating_window_s = 1e-6;  // 2 samples
  EXPECT_THROW(ae_sample_params(s, kRate), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
