// The ae_hits stage on the GPU against the CPU stage: the same events in the same order (hits and
// level intervals; their double sums within 1e-9 relative, since only the order of the additions
// differs), in copy and mapped memory, chunks of 7 to 65536 frames, through a reload that shortens
// the hit times. A launch failure hands over to the CPU twin with nothing lost, also when the
// stage before it kept its output on the device. Skipped where no GPU answers.
#include "stages/ae_hits_cuda_stage.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/ae_compare.hpp"
#include "../support/ae_lanes.hpp"
#include "../support/gpu.hpp"
#include "../support/stage_run.hpp"
#include "core/spsc_queue.hpp"
#include "config/settings.hpp"
#include "stages/denoise_cuda_stage.hpp"

namespace vigil {
namespace {

constexpr double kRate = 2e6;
constexpr double kSumRel = 1e-9;
constexpr uint32_t kBands = 2, kChannels = 7, kTotal = 400000, kMaxChunk = 65536;

AeHitSettings settings() {
  AeHitSettings s;
  s.preamp_gain_db = 20;  // threshold 45 dB_AE = 1.78e-3 full scale
  s.level_interval_s = 0.01;
  return s;
}

StageSettings shorter_times() {
  AeHitSettings s = settings();
  s.hdt_s = 300e-6;
  s.hlt_s = 400e-6;
  s.threshold_db = 47;
  return StageSettings{"hits", "ae_hits", "input", false, s};
}

// The stage over test::ae_lanes in chunks of 65536, 1000, 30000 and 7 frames, with a reload before chunk 3.
test::StageRun run(Stage& stage) {
  stage.prepare({kRate, kChannels, kBands, {"a", "b"}, 0}, kMaxChunk);
  const std::vector<float> x = test::ae_lanes(kRate, kBands * kChannels, kTotal, 11, 5);
  return test::run_stage(stage, {kChannels, kBands, 0, kMaxChunk}, x, kTotal, {kMaxChunk, 1000, 30000, 7},
                         [&](uint64_t chunk) {
                           if (chunk != 3) return;
                           StageUpdatePlan plan = stage.plan_update(shorter_times());
                           ASSERT_FALSE(plan.structural) << plan.why;
                           ASSERT_TRUE(plan.update);
                           stage.apply_update(*plan.update);
                         });
}

size_t fallbacks(const std::vector<EventRecord>& events) {
  size_t n = 0;
  for (const EventRecord& e : events) n += e.kind == EventKind::kBackendFallback;
  return n;
}

// got (less its fallback events) against want, event by event.
void expect_same_events(const std::vector<EventRecord>& got_all, const std::vector<EventRecord>& want) {
  std::vector<EventRecord> got;
  for (const EventRecord& e : got_all)
    if (e.kind != EventKind::kBackendFallback) got.push_back(e);
  size_t hits = 0, levels = 0;
  for (const EventRecord& e : want) (e.kind == EventKind::kAeHit ? hits : levels) += 1;
  EXPECT_GT(hits, 200u);
  EXPECT_GT(levels, 200u);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const EventRecord &g = got[i], &w = want[i];
    SCOPED_TRACE("event " + std::to_string(i) + " lane " + std::to_string(w.band) + "/" + std::to_string(w.channel) +
                 " frame " + std::to_string(w.frame));
    ASSERT_EQ(g.kind, w.kind);
    ASSERT_EQ(g.band, w.band);
    ASSERT_EQ(g.channel, w.channel);
    ASSERT_EQ(g.frame, w.frame);
    EXPECT_EQ(g.stage, w.stage);
    EXPECT_EQ(g.t_utc_ns, w.t_utc_ns);
    if (w.kind == EventKind::kAeHit) {
      EXPECT_EQ(g.hit.arrival_frame, w.hit.arrival_frame);
      test::expect_same_hit_after_arrival(g.hit, w.hit, kSumRel);
    } else {
      test::expect_same_level(g.ae_level, w.ae_level, kSumRel);
    }
  }
}

void same_events_as_the_cpu_stage(bool mapped) {
  AeHitsStage cpu(settings(), 3);
  const test::StageRun want = run(cpu);
  AeHitsCudaStage gpu(settings(), 3, CudaStageOptions{mapped, 0});
  const test::StageRun got = run(gpu);
  expect_same_events(got.events, want.events);
  EXPECT_EQ(fallbacks(got.events), 0u);
  EXPECT_EQ(got.events_dropped, 0u);
  EXPECT_FALSE(gpu.on_cpu());
  nlohmann::json status;
  gpu.add_status(status);
  EXPECT_EQ(status["backend"], "cuda");
  EXPECT_EQ(status["memory"], mapped ? "mapped" : "copy");
}

TEST(AeHitsCudaStage, SameEventsAsTheCpuStageCopyMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_events_as_the_cpu_stage(false);
}

TEST(AeHitsCudaStage, SameEventsAsTheCpuStageMappedMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_events_as_the_cpu_stage(true);
}

TEST(AeHitsCudaStage, ALaunchFailureHandsOverToTheCpuTwinWithNothingLost) {
  VIGIL_SKIP_WITHOUT_GPU();
  AeHitsStage cpu(settings(), 3);
  const test::StageRun want = run(cpu);
  AeHitsCudaStage gpu(settings(), 3, CudaStageOptions{false, 6});  // the 6th chunk (after the reload)
  const test::StageRun got = run(gpu);
  expect_same_events(got.events, want.events);
  EXPECT_EQ(fallbacks(got.events), 1u);
  EXPECT_TRUE(gpu.on_cpu());
  nlohmann::json status;
  gpu.add_status(status);
  EXPECT_EQ(status["backend"], "cpu (fallback)");
  EXPECT_EQ(status["cuda_errors"], 1);
}

// Denoiser -> hits, both CUDA: run by hand as the graph runs them (the hits read the denoiser's
// output block, its page-locked staging, and bind it as their producer).
std::vector<EventRecord> run_pair(bool keep_on_device, uint64_t hits_fail_at, uint64_t* device_input_chunks) {
  DenoiseStageSettings ds;
  ds.window = 1024;
  DenoiseCudaStage den(ds, 1, CudaStageOptions{false, 0});
  AeHitsCudaStage hits(settings(), 2, CudaStageOptions{false, hits_fail_at});
  den.keep_output_on_device(keep_on_device);
  const StreamFormat den_out = den.prepare({kRate, kChannels, kBands, {"a", "b"}, 0}, kMaxChunk);
  hits.bind_input(den.output_buffer());
  hits.bind_producer(&den);
  hits.prepare(den_out, kMaxChunk);
  const std::vector<float> x = test::ae_lanes(kRate, kBands * kChannels, kTotal, 12, 6);
  std::vector<float> in(size_t(kBands) * kChannels * kMaxChunk);
  SpscQueue<EventRecord> queue(8192);
  std::atomic<uint64_t> dropped{0};
  std::vector<EventRecord> events;
  const uint32_t sizes[] = {kMaxChunk, 20000, 777};
  uint64_t k = 0;
  for (uint32_t at = 0; at < kTotal; ++k) {
    const uint32_t n = std::min(sizes[k % 3], kTotal - at);
    for (uint32_t l = 0; l < kBands * kChannels; ++l)
      std::copy_n(x.data() + size_t(l) * kTotal + at, n, in.data() + size_t(l) * kMaxChunk);
    Block bin{in.data(), kMaxChunk, n, kChannels, kBands};
    Block bden{den.output_buffer(), kMaxChunk, n, kChannels, kBands};
    Block none{nullptr, 0, 0, kChannels, 0};
    Exec exec;
    exec.chunk.first_frame = at;
    exec.events = &queue;
    exec.events_dropped = &dropped;
    EXPECT_EQ(den.process(bin, bden, exec), StageStatus::kOk);
    // As Graph::run: a reader on the host first has the producer's output brought back.
    if (hits.needs_host_input()) {
      EXPECT_TRUE(den.make_output_host_valid(n));
    }
    EXPECT_EQ(hits.process(bden, none, exec), StageStatus::kOk);
    EventRecord ev;
    while (queue.pop(ev)) events.push_back(ev);
    at += n;
  }
  EXPECT_EQ(dropped.load(), 0u);
  *device_input_chunks = hits.device_input_chunks();
  return events;
}

TEST(AeHitsCudaStage, ReadsADenoisersOutputOnTheDevice) {
  VIGIL_SKIP_WITHOUT_GPU();
  uint64_t on_device = 0, copied = 0;
  const std::vector<EventRecord> want = run_pair(false, 0, &copied);
  const std::vector<EventRecord> kept = run_pair(true, 0, &on_device);
  EXPECT_EQ(on_device, copied) << "the hits always read the denoiser's device output in copy mode";
  EXPECT_GT(on_device, 10u);
  // The same GPU computation on the same data: identical events.
  expect_same_events(kept, want);
  EXPECT_EQ(fallbacks(kept), 0u);
}

TEST(AeHitsCudaStage, ALaunchFailureOnAChunkKeptOnTheDeviceBringsItBackWithNothingLost) {
  VIGIL_SKIP_WITHOUT_GPU();
  uint64_t copied = 0, failed = 0;
  const std::vector<EventRecord> want = run_pair(false, 0, &copied);
  const std::vector<EventRecord> fell = run_pair(true, 4, &failed);
  EXPECT_EQ(failed, 3u) << "on the device up to the failing 4th chunk";
  expect_same_events(fell, want);
  EXPECT_EQ(fallbacks(fell), 1u);
}

}  // namespace
}  // namespace vigil
