// The ae_hits stage with its lanes split over a worker pool gives the same events, in the same
// order, as on one thread — through a reload that shortens the hit times mid-run too.
#include "stages/ae_hits_stage.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../support/ae_lanes.hpp"
#include "../support/stage_run.hpp"
#include "config/settings.hpp"
#include "wire/event_text.hpp"

namespace vigil {
namespace {

constexpr double kRate = 2e6;

// The stage over lanes of noise and bursts (test::ae_lanes), with a reload at chunk 3.
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
  const std::vector<float> x = test::ae_lanes(kRate, bands * channels, total, 11, 5);
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


// The output thread writes AE events as text (write_event): the same fields and values as the
// JSON body describe_event gives, for every hit and level of a run.
TEST(AeHitsStage, EventsWrittenAsTextEqualTheirJsonBodies) {
  const uint32_t bands = 1, channels = 5, total = 300000, max_chunk = 65536;
  AeHitSettings s;
  s.preamp_gain_db = 20;
  s.level_interval_s = 0.01;
  AeHitsStage stage(s, 2, nullptr);
  stage.prepare({kRate, channels, bands, {"a"}, 0}, max_chunk);
  const std::vector<float> x = test::ae_lanes(kRate, bands * channels, total, 13, 5);
  const test::StageRun r = test::run_stage(stage, {channels, bands, 0, max_chunk}, x, total, {max_chunk, 1000}, {});
  size_t hits = 0, levels = 0;
  EventText text;
  for (const EventRecord& e : r.events) {
    nlohmann::json body;
    stage.describe_event(e, body);
    text.begin();
    ASSERT_TRUE(stage.write_event(e, text));
    text.end();
    ASSERT_EQ(nlohmann::json::parse(text.str()), body) << text.str();
    (e.kind == EventKind::kAeHit ? hits : levels) += 1;
  }
  EXPECT_GT(hits, 50u);
  EXPECT_GT(levels, 50u);
}

}  // namespace
}  // namespace vigil
