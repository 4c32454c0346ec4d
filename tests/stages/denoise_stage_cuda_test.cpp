// The wavelet_denoise stage on the CUDA backend against its CPU twin (DenoiseStage, the same
// StreamingDenoiser windows and delay) on fresh random input in chunks of varying size; copy and
// mapped staging give identical output; an injected launch failure hands over to the CPU twin
// without a chunk lost or disturbed. Output blocks are poisoned (NaN) before every chunk. Skipped,
// with the reason, where no CUDA device can be used.
#include "stages/denoise_cuda_stage.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/stage_run.hpp"
#include "../support/tolerances.hpp"
#include "core/spsc_queue.hpp"
#include "stages/denoise_stage.hpp"
#include "stages/event_record.hpp"

namespace vigil {
namespace {

constexpr uint32_t kChannels = 3, kBands = 2, kLanes = kChannels * kBands, kMaxFrames = 1000;

DenoiseStageSettings settings() {
  DenoiseStageSettings s;
  s.wavelet = "db8";
  s.window = 1024;
  return s;
}

StreamFormat input_format() {
  StreamFormat f;
  f.rate_hz = 51200;
  f.channels = kChannels;
  f.bands = kBands;
  f.band_names = {"low", "high"};
  f.delay_frames = 7;
  return f;
}

using test::StageRun;

StageRun run(Stage& stage, const std::vector<float>& x, uint32_t total, const std::vector<uint32_t>& sizes) {
  return test::run_stage(stage, {kChannels, kBands, kBands, kMaxFrames}, x, total, sizes);
}

std::vector<float> input(uint32_t total, uint32_t seed) {
  std::vector<float> x = test::randn(size_t(kLanes) * total, seed, 0.05f);
  for (uint32_t l = 0; l < kLanes; ++l)
    for (uint32_t t = 0; t < total; ++t) x[size_t(l) * total + t] += 0.4f * float(std::sin(0.003 * (l + 1) * t));
  return x;
}

TEST(DenoiseCudaStage, MatchesTheCpuTwinInBothMemoryModes) {
  VIGIL_SKIP_WITHOUT_GPU();
  const uint32_t total = 40000;
  const std::vector<float> x = input(total, std::random_device{}());
  const std::vector<uint32_t> sizes = {1000, 1, 999, 513, 37, 1000, 512, 640};
  DenoiseStage cpu(settings());
  const StreamFormat cpu_out = cpu.prepare(input_format(), kMaxFrames);
  const std::vector<float> want = run(cpu, x, total, sizes).out;
  std::vector<float> outs[2];
  for (bool mapped : {false, true}) {
    DenoiseCudaStage stage(settings(), 2, {mapped, 0});
    const StreamFormat out = stage.prepare(input_format(), kMaxFrames);
    EXPECT_EQ(out.delay_frames, cpu_out.delay_frames);
    EXPECT_EQ(out.delay_frames, 7u + 1024u);
    EXPECT_EQ(out.bands, kBands);
    StageRun r = run(stage, x, total, sizes);
    EXPECT_LE(test::rel_l2(r.out, want), test::kGpuVsCpuRelL2) << "mapped " << mapped;
    EXPECT_TRUE(r.events.empty());
    nlohmann::json st;
    stage.add_status(st);
    EXPECT_EQ(st["backend"], "cuda");
    EXPECT_EQ(st["memory"], mapped ? "mapped" : "copy");
    EXPECT_GT(st["gpu_us"]["max"].get<uint64_t>(), 0u);
    outs[mapped] = std::move(r.out);
  }
  EXPECT_EQ(outs[0], outs[1]) << "copy and mapped staging differ";
}

TEST(DenoiseCudaStage, ALaunchFailureMovesToTheCpuTwinWithoutLosingAChunk) {
  VIGIL_SKIP_WITHOUT_GPU();
  const uint32_t total = 30000;
  const std::vector<float> x = input(total, std::random_device{}());
  const std::vector<uint32_t> sizes = {700, 1000, 333};
  DenoiseStage cpu(settings());
  cpu.prepare(input_format(), kMaxFrames);
  const std::vector<float> want = run(cpu, x, total, sizes).out;
  DenoiseCudaStage stage(settings(), 4, {false, 9});  // the 9th chunk's launch fails
  stage.prepare(input_format(), kMaxFrames);
  StageRun r = run(stage, x, total, sizes);
  EXPECT_TRUE(stage.on_cpu());
  EXPECT_LE(test::rel_l2(r.out, want), test::kGpuVsCpuRelL2);
  const uint32_t at = 2 * (700 + 1000 + 333) + 700 + 1000;  // the 9th chunk's first frame
  for (uint32_t l = 0; l < kLanes; ++l)
    for (uint32_t i = at - 600; i < at + 2400; ++i)
      ASSERT_NEAR(r.out[size_t(l) * total + i], want[size_t(l) * total + i], test::kHandOverSampleAbs) << "lane " << l << " at " << i;
  test::expect_one_fallback(stage, r, 4, at);
}

}  // namespace
}  // namespace vigil
