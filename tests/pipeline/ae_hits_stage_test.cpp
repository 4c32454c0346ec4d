// The ae_hits stage with its lanes split over a worker pool gives the same events, in the same
// order, as on one thread — through a reload that shortens the hit times mid-run too.
#include "pipeline/ae_hits_stage.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "../support/stage_run.hpp"
#include "acquisition/synthetic_source.hpp"
#include "config/settings.hpp"

namespace vigil {
namespace {

constexpr double kRate = 2e6;

// Lanes of noise whose level varies by lane (some hover near the threshold: frequent, long,
// truncated hits) plus Poisson bursts of random amplitude.
std::vector<float> make_lanes(uint32_t lanes, uint32_t frames) {
  SyntheticSpec spec;
  spec.rate_hz = kRate;
  spec.channels = lanes;
  spec.format = SampleFormat::kFloat32;
  spec.seed = 11;
  std::mt19937 rng{5};
  for (uint32_t l = 0; l < lanes; ++l) {
    ChannelSignal s;
    s.noise_rms = 2e-4 * (1 + l % 5);
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

test::StageRun run(WorkerPool* pool, uint32_t expect_parts) {
  const uint32_t bands = 2, channels = 7, total = 400000, max_chunk = 65536;
  AeHitSettings s;
  s.preamp_gain_db = 20;  // threshold 45 dB_AE = 1.78e-3 full scale
  s.level_interval_s = 0.01;
  AeHitsStage stage(s, 3, pool);
  stage.prepare({kRate, channels, bands, {"a", "b"}, 0}, max_chunk);
  EXPECT_EQ(stage.parallel_parts(), expect_parts);
  AeHitSettings shorter = s;
  shorter.hdt_s = 200e-6;
  shorter.hlt_s = 300e-6;
  StageSettings next{"hits", "ae_hits", "bands", false, shorter};
  const std::vector<float> x = make_lanes(bands * channels, total);
  return test::run_stage(stage, {channels, bands, 0, max_chunk}, x, total, {max_chunk, 1000, 30000, 7},
                         [&](uint64_t chunk) {
                           if (chunk != 3) return;
                           StageUpdatePlan plan = stage.plan_update(next);
                           ASSERT_FALSE(plan.structural) << plan.why;
                           ASSERT_TRUE(plan.update);
                           stage.apply_update(*plan.update);
                         });
}

TEST(AeHitsStage, LanesSplitOverAPoolGiveTheSameEventsInTheSameOrder) {
  const test::StageRun alone = run(nullptr, 1);
  WorkerPool pool(3);
  const test::StageRun split = run(&pool, 3);
  size_t hits = 0, levels = 0;
  for (const EventRecord& e : alone.events) (e.kind == EventKind::kAeHit ? hits : levels) += 1;
  EXPECT_GT(hits, 200u);
  EXPECT_GT(levels, 200u);
  EXPECT_EQ(alone.events_dropped, 0u);
  EXPECT_EQ(split.events_dropped, 0u);
  ASSERT_EQ(split.events.size(), alone.events.size());
  for (size_t i = 0; i < alone.events.size(); ++i) {
    const EventRecord &a = alone.events[i], &b = split.events[i];
    SCOPED_TRACE("event " + std::to_string(i));
    ASSERT_EQ(b.kind, a.kind);
    ASSERT_EQ(b.stage, a.stage);
    ASSERT_EQ(b.band, a.band);
    ASSERT_EQ(b.channel, a.channel);
    ASSERT_EQ(b.frame, a.frame);
    ASSERT_EQ(b.t_utc_ns, a.t_utc_ns);
    ASSERT_EQ(b.hit.arrival_frame, a.hit.arrival_frame);
    ASSERT_EQ(b.hit.peak_frame, a.hit.peak_frame);
    ASSERT_EQ(b.hit.end_frame, a.hit.end_frame);
    ASSERT_EQ(b.hit.peak, a.hit.peak);
    ASSERT_EQ(b.hit.counts, a.hit.counts);
    ASSERT_EQ(b.ae_level.end_frame, a.ae_level.end_frame);
    ASSERT_EQ(b.ae_level.samples, a.ae_level.samples);
  }
}

// The per-part buffers hold what a lane can raise in a chunk: hits at least min(HDT, the longest
// hit) + HLT + 1 samples apart, levels one interval apart.
TEST(AeHitsStage, EventsPerLaneBoundsHitsAndLevels) {
  AeSampleParams p;
  p.hdt = 100;
  p.hlt = 50;
  p.max_duration = 1000;
  p.level_interval = 500;
  EXPECT_EQ(AeHitsStage::events_per_lane(p, 10000), 10000u / 151 + 2 + 10000u / 500 + 2);
  p.max_duration = 10;  // cut short: closer together
  p.level_interval = 0;
  EXPECT_EQ(AeHitsStage::events_per_lane(p, 10000), 10000u / 61 + 2);
}

}  // namespace
}  // namespace vigil
