// The fir_bank stage on the CUDA backend, in both its forms, against its CPU twin (the direct
// form: FirBank, no delay; the FFT form: PartitionedFirBank, same uniform layout and latency) on
// fresh random input in chunks of varying size; copy and mapped staging give identical output;
// an injected launch failure moves the stage to the CPU twin without a chunk lost or disturbed; a
// reload crossfades to the new taps; graphs replay full chunks with the same output. Output
// blocks are poisoned (NaN) before every chunk. Skipped, with the reason, where no CUDA device
// can be used.
#include "stages/fir_bank_cuda_stage.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "../support/signals.hpp"
#include "../support/stage_run.hpp"
#include "../support/tolerances.hpp"
#include "core/spsc_queue.hpp"
#include "cuda/cuda_check.hpp"
#include "stages/event_record.hpp"
#include "stages/fir_bank_stage.hpp"

namespace vigil {
namespace {

using test::rel_l2;

constexpr double kRate = 48000;
constexpr uint32_t kChannels = 3, kMaxFrames = 1000;  // not a power of two: B = 512

class FirBankCudaStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  }
};

FirBankSettings settings(uint32_t taps, double split_hz, FirForm form = FirForm::kAuto) {
  FirBankSettings s;
  s.taps = taps;
  s.form = form;
  s.bands = {{"low", FilterType::kLowpass, split_hz, 0}, {"high", FilterType::kHighpass, split_hz, 0}};
  return s;
}

using test::StageRun;

// The forms the tests below take each through: the FFT form, the direct form auto takes for a
// short filter, and the direct form of a long filter (the split kernel, S3's length; auto takes it
// for S3's shorter chunks, below).
const std::pair<uint32_t, FirForm> kForms[] = {{1025, FirForm::kFft}, {255, FirForm::kAuto}, {8191, FirForm::kDirect}};

// form: auto's choice: the direct form for short filters whatever the chunk, and for long ones
// over chunks of few products (S3's 256 frames of 2 channels x 4 bands), not for S2's.
TEST(FirBankCudaStageForm, AutoTakesTheDirectFormForShortFiltersAndShortChunks) {
  EXPECT_TRUE(FirBankCudaStage::auto_direct(255, 65536, 1024));    // S1's band-pass at 256 rigs
  EXPECT_TRUE(FirBankCudaStage::auto_direct(8191, 256, 2 * 4));    // S3
  EXPECT_FALSE(FirBankCudaStage::auto_direct(8191, 1024, 64 * 4)); // S2
  EXPECT_FALSE(FirBankCudaStage::auto_direct(8191, 256, 16 * 4));  // S3's filter over 16 channels
  EXPECT_FALSE(FirBankCudaStage::auto_direct(2048, 256, 64));      // where the FFT form measured faster
}

// Feeds x (channels x total, planar) through `stage` in chunks whose sizes come from `sizes`.
StageRun run(Stage& stage, const std::vector<float>& x, uint32_t total, const std::vector<uint32_t>& sizes,
             const std::function<void(uint64_t chunk)>& before = {}, uint32_t max_frames = kMaxFrames) {
  return test::run_stage(stage, {kChannels, 1, 2, max_frames}, x, total, sizes, before);
}

// The CPU twin over the whole input at once: what the stage must give. block 0: the direct form.
std::vector<float> reference(const FirBankSettings& s, const std::vector<float>& x, uint32_t total, uint32_t block) {
  std::vector<float> y(size_t(2) * kChannels * total);
  if (block == 0) {
    FirBank cpu(FirBankStage::design(s, kRate), kChannels, total);
    cpu.process(x.data(), total, total, y.data(), total);
  } else {
    PartitionedFirBank cpu(FirBankStage::design(s, kRate), kChannels, PartitionedFirBank::uniform(block));
    cpu.process(x.data(), total, total, y.data(), total);
  }
  return y;
}

StreamFormat input_format() {
  StreamFormat f;
  f.rate_hz = kRate;
  f.channels = kChannels;
  f.bands = 1;
  return f;
}

TEST_F(FirBankCudaStageTest, MatchesTheCpuTwinInBothMemoryModes) {
  const uint32_t total = 40000;
  const std::vector<float> x = test::randn(size_t(kChannels) * total, std::random_device{}());
  const std::vector<uint32_t> sizes = {1000, 1, 999, 513, 37, 1000, 512, 640};
  // Each length in the form auto picks and in the other one: auto takes the direct form for short
  // filters and for chunks of few products (here 1000 frames x 6 lanes: up to 4194 taps); the
  // direct form runs the split kernel beyond 4096 taps.
  struct Case {
    uint32_t taps;
    FirForm form;
    bool direct;
  };
  for (const Case c : {Case{31, FirForm::kAuto, true}, Case{255, FirForm::kAuto, true}, Case{385, FirForm::kAuto, true},
                       Case{2049, FirForm::kAuto, true}, Case{8191, FirForm::kAuto, false},
                       Case{8191, FirForm::kDirect, true}, Case{31, FirForm::kFft, false},
                       Case{255, FirForm::kFft, false}, Case{2049, FirForm::kFft, false},
                       Case{4095, FirForm::kDirect, true}}) {
    const uint32_t taps = c.taps;
    const FirBankSettings s = settings(taps, 3000, c.form);
    std::vector<float> outs[2];
    for (bool mapped : {false, true}) {
      FirBankCudaStage stage(s, 0, {mapped, 0});
      const StreamFormat out = stage.prepare(input_format(), kMaxFrames);
      EXPECT_EQ(stage.direct(), c.direct) << taps << " taps";
      const uint32_t block = c.direct ? 0 : 512;
      EXPECT_EQ(stage.block(), block);
      EXPECT_EQ(out.delay_frames, block);
      EXPECT_EQ(out.bands, 2u);
      StageRun r = run(stage, x, total, sizes);
      const double err = rel_l2(r.out, reference(s, x, total, block));
      EXPECT_LE(err, test::kGpuVsCpuRelL2) << taps << " taps, direct " << c.direct << ", mapped " << mapped;
      EXPECT_TRUE(r.events.empty());
      EXPECT_FALSE(stage.on_cpu());
      nlohmann::json st;
      stage.add_status(st);
      EXPECT_EQ(st["backend"], "cuda");
      EXPECT_EQ(st["memory"], mapped ? "mapped" : "copy");
      EXPECT_GT(st["gpu_us"]["max"].get<uint64_t>(), 0u);
      EXPECT_EQ(st["form"], c.direct ? "direct" : "fft (uniform partitions of 512)");
      EXPECT_EQ(st["delay_frames"], block);
      outs[mapped] = std::move(r.out);
    }
    EXPECT_EQ(outs[0], outs[1]) << "copy and mapped staging differ at " << taps << " taps";
  }
}

TEST_F(FirBankCudaStageTest, ALaunchFailureMovesToTheCpuTwinWithoutLosingAChunk) {
  const uint32_t total = 30000;
  const std::vector<float> x = test::randn(size_t(kChannels) * total, std::random_device{}());
  for (const auto& [taps, form] : kForms) {
    const FirBankSettings s = settings(taps, 5000, form);
    FirBankCudaStage stage(s, 4, {false, 9});  // the 9th chunk's launch fails
    stage.prepare(input_format(), kMaxFrames);
    const uint32_t block = stage.block();
    EXPECT_EQ(stage.direct(), form != FirForm::kFft);
    const std::vector<uint32_t> sizes = {700, 1000, 333};
    StageRun r = run(stage, x, total, sizes);
    EXPECT_TRUE(stage.on_cpu());
    // Every output sample, before, at and after the failure, is the filter's: nothing lost, no seam.
    const std::vector<float> want = reference(s, x, total, block);
    EXPECT_LE(rel_l2(r.out, want), test::kGpuVsCpuRelL2) << taps << " taps";
    // Around the handover in particular (the 9th chunk starts at 700+1000+333 times 2 + 700 + 1000).
    const uint32_t at = 2 * (700 + 1000 + 333) + 700 + 1000;
    for (uint32_t lane = 0; lane < 2 * kChannels; ++lane)
      for (uint32_t i = at - 600; i < at + 1400; ++i)
        ASSERT_NEAR(r.out[size_t(lane) * total + i], want[size_t(lane) * total + i], test::kHandOverSampleAbs)
            << taps << " taps, lane " << lane << " at " << i;
    test::expect_one_fallback(stage, r, 4, at);
  }
}

TEST_F(FirBankCudaStageTest, AReloadCrossfadesToTheNewTapsOverOneChunk) {
  const uint32_t total = 24000, chunk = 1000;
  const std::vector<float> x = test::randn(size_t(kChannels) * total, std::random_device{}());
  for (const auto& [taps, form] : kForms) {
    const FirBankSettings before = settings(taps, 2000, form), after = settings(taps, 6000, form);
    FirBankCudaStage stage(before, 0, {false, 0});
    stage.prepare(input_format(), kMaxFrames);
    EXPECT_EQ(stage.direct(), form != FirForm::kFft);
    StageSettings next;
    next.params = after;
    StageUpdatePlan plan = stage.plan_update(next);
    ASSERT_FALSE(plan.structural) << plan.why;
    ASSERT_TRUE(plan.update);
    const uint64_t swap_chunk = 10;  // applied between chunks 9 and 10; chunk 10 crossfades
    StageRun r = run(stage, x, total, {chunk}, [&](uint64_t k) {
      if (k == swap_chunk) stage.apply_update(*plan.update);
    });
    const std::vector<float> old_y = reference(before, x, total, stage.block()),
                             new_y = reference(after, x, total, stage.block());
    for (uint32_t lane = 0; lane < 2 * kChannels; ++lane) {
      const size_t base = size_t(lane) * total;
      for (uint32_t i = 0; i < total; ++i) {
        const float got = r.out[base + i];
        if (i < swap_chunk * chunk) {
          ASSERT_NEAR(got, old_y[base + i], test::kHandOverSampleAbs) << taps << " taps, before, lane " << lane << " at " << i;
        } else if (i >= (swap_chunk + 1) * chunk) {
          ASSERT_NEAR(got, new_y[base + i], test::kHandOverSampleAbs) << taps << " taps, after, lane " << lane << " at " << i;
        } else {  // between the two filters' outputs, weighted linearly
          const float w = float(i - swap_chunk * chunk + 1) / float(chunk);
          ASSERT_NEAR(got, (1 - w) * old_y[base + i] + w * new_y[base + i], test::kHandOverSampleAbs) << taps << " taps, crossfade at " << i;
        }
      }
    }
    EXPECT_FALSE(stage.on_cpu());
  }
}

// A launch failure some chunks after a reload: the CPU twin takes over with the new taps, so every
// sample from the failing chunk on is the new filter's (both forms).
TEST_F(FirBankCudaStageTest, ALaunchFailureAfterAReloadLeavesTheCpuTwinOnTheNewTaps) {
  const uint32_t total = 24000, chunk = 1000;
  const std::vector<float> x = test::randn(size_t(kChannels) * total, std::random_device{}());
  for (const auto& [taps, form] : kForms) {
    const FirBankSettings before = settings(taps, 2000, form), after = settings(taps, 6000, form);
    FirBankCudaStage stage(before, 0, {false, 15});  // the 15th chunk (index 14) fails
    stage.prepare(input_format(), kMaxFrames);
    StageSettings next;
    next.params = after;
    StageUpdatePlan plan = stage.plan_update(next);
    ASSERT_TRUE(plan.update) << plan.why;
    StageRun r = run(stage, x, total, {chunk}, [&](uint64_t k) {
      if (k == 10) stage.apply_update(*plan.update);  // chunk 10 crossfades
    });
    EXPECT_TRUE(stage.on_cpu());
    test::expect_one_fallback(stage, r, 0, 14u * chunk);
    const std::vector<float> new_y = reference(after, x, total, stage.block());
    for (uint32_t lane = 0; lane < 2 * kChannels; ++lane)
      for (uint32_t i = 11 * chunk; i < total; ++i)
        ASSERT_NEAR(r.out[size_t(lane) * total + i], new_y[size_t(lane) * total + i], test::kHandOverSampleAbs)
            << taps << " taps, lane " << lane << " at " << i;
  }
}

// One filter of the test below: the FFT form in 256-frame blocks (4 a chunk), or the direct form.
void run_graph_case(uint32_t taps, FirForm form) {
  const uint32_t total = 60000, max_frames = 1024;
  const std::vector<float> x = test::randn(size_t(kChannels) * total, std::random_device{}());
  FirBankSettings before = settings(taps, 3000, form), after = settings(taps, 7000, form);
  before.max_latency_frames = after.max_latency_frames = 256;
  // 300 + 724: a chunk off the block boundary and back on it.
  const std::vector<uint32_t> sizes = {1024, 1024, 1024, 300, 724, 1024, 1024, 1024, 1024, 1024, 1024, 1024};
  for (bool mapped : {false, true}) {
    std::vector<float> outs[2];
    uint64_t graph_chunks[2] = {0, 0};
    for (bool graphs : {false, true}) {
      FirBankCudaStage stage(before, 0, {mapped, 0, graphs});
      stage.prepare(input_format(), max_frames);
      ASSERT_EQ(stage.block(), form == FirForm::kFft ? 256u : 0u);
      StageSettings next;
      next.params = after;
      StageUpdatePlan plan = stage.plan_update(next);
      ASSERT_TRUE(plan.update) << plan.why;
      const uint64_t swap_chunk = 30;
      uint64_t graph_chunks_at_swap = 0;
      StageRun r = run(stage, x, total, sizes, [&](uint64_t k) {
        if (k == swap_chunk) {
          graph_chunks_at_swap = stage.graph_chunks();
          stage.apply_update(*plan.update);
        }
      }, max_frames);
      EXPECT_FALSE(stage.on_cpu());
      graph_chunks[graphs] = stage.graph_chunks();
      if (graphs) {
        // Before the swap the 1024-frame chunks on a block boundary replay the graph; after it,
        // the new filter's.
        EXPECT_GE(graph_chunks_at_swap, 20u);
        EXPECT_GE(stage.graph_chunks() - graph_chunks_at_swap, 20u) << "the reloaded filter replays no graph";
        nlohmann::json st;
        stage.add_status(st);
        EXPECT_EQ(st["graph_chunks"].get<uint64_t>(), stage.graph_chunks());
      }
      // The old filter's output up to the swap chunk, against the CPU twin over everything.
      const std::vector<float> want = reference(before, x, total, stage.block());
      std::vector<float> got_head, want_head;
      const uint32_t swap_frame = [&] {
        uint32_t at = 0;
        for (uint64_t k = 0; k < swap_chunk; ++k) at += sizes[k % sizes.size()];
        return at;
      }();
      for (uint32_t lane = 0; lane < 2 * kChannels; ++lane) {
        got_head.insert(got_head.end(), r.out.begin() + long(lane) * total, r.out.begin() + long(lane) * total + swap_frame);
        want_head.insert(want_head.end(), want.begin() + long(lane) * total, want.begin() + long(lane) * total + swap_frame);
      }
      EXPECT_LE(rel_l2(got_head, want_head), test::kGpuVsCpuRelL2) << taps << " taps, graphs " << graphs << ", mapped " << mapped;
      outs[graphs] = std::move(r.out);
    }
    EXPECT_EQ(graph_chunks[0], 0u);
    EXPECT_EQ(outs[0], outs[1]) << "graph and launch-by-launch differ (" << taps << " taps, mapped " << mapped << ")";
  }
}

// Chunks of whole blocks replay one CUDA graph per filter; any other chunk runs launch by launch.
// Both give the same samples (bit for bit), before and after a reload (whose primed spare is left
// on a block boundary, so it replays its own graph), in both memory modes and both forms (the
// direct form replays every full-size chunk).
TEST_F(FirBankCudaStageTest, ChunksOfWholeBlocksReplayAsAGraphWithTheSameOutput) {
  for (const auto& [taps, form] : kForms) run_graph_case(taps, form);
}

}  // namespace
}  // namespace vigil
