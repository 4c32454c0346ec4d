// CUDA stages split by channel ranges (pipeline.gpus: [0, 0], two parts on the one device a
// one-GPU machine has) give the output of the stage whole to the bit, and the same events in the
// same order: the FIR bank in both forms, the wavelet denoiser over a bank's bands, the AE hits.
// A part whose device fails hands its channels to its CPU twin and the other part stays on the
// GPU; the status and the fallback event say which part. Skipped, with the reason, where no CUDA
// device can be used (scripts/gpu-check.sh runs them where one can).
#include "stages/channel_split_stage.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>

#include "../support/ae_lanes.hpp"
#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/stage_config.hpp"
#include "../support/stage_run.hpp"
#include "../support/tolerances.hpp"
#include "stages/stage_factory.hpp"

namespace vigil {
namespace {


StageBackend gpu_backend(std::vector<int> devices = {}) {
  StageBackend b;
  b.cuda = true;
  b.gpu_resident = true;
  b.devices = std::move(devices);
  return b;
}

// lanes x total samples of N(0, 0.3^2).
std::vector<float> noise(uint32_t lanes, uint32_t total, uint32_t seed) {
  return test::randn(size_t(lanes) * total, seed, 0.3f);
}

// The stage whole and split in two on device 0, over the same input: outputs and events equal.
void expect_split_is_whole(const StageSettings& s, const StreamFormat& in, uint32_t out_bands, uint32_t max_frames,
                           const std::vector<float>& x, uint32_t total, const std::vector<uint32_t>& sizes,
                           size_t min_events = 0) {
  std::unique_ptr<Stage> whole = make_stage(s, 1, true, gpu_backend());
  std::unique_ptr<Stage> split = make_split_stage(s, 1, 2, gpu_backend({0, 0}));
  test::StageRun runs[2];
  Stage* stages[2] = {whole.get(), split.get()};
  for (int k = 0; k < 2; ++k) {
    const StreamFormat out = stages[k]->prepare(in, max_frames);
    ASSERT_EQ(out.bands, out_bands);
    runs[k] = test::run_stage(*stages[k], {in.channels, in.bands, out_bands, max_frames}, x, total, sizes);
  }
  size_t differ = 0;
  ASSERT_EQ(runs[1].out.size(), runs[0].out.size());
  for (size_t i = 0; i < runs[0].out.size(); ++i) differ += runs[1].out[i] != runs[0].out[i];
  EXPECT_EQ(differ, 0u) << "of " << runs[0].out.size() << " samples";
  EXPECT_GE(runs[0].events.size(), min_events);
  ASSERT_EQ(runs[1].events.size(), runs[0].events.size());
  for (size_t i = 0; i < runs[0].events.size(); ++i) {
    const EventRecord &a = runs[0].events[i], &b = runs[1].events[i];
    SCOPED_TRACE("event " + std::to_string(i));
    ASSERT_EQ(b.kind, a.kind);
    ASSERT_EQ(b.band, a.band);
    ASSERT_EQ(b.channel, a.channel);
    ASSERT_EQ(b.frame, a.frame);
    ASSERT_EQ(b.hit.peak, a.hit.peak);
    ASSERT_EQ(b.hit.counts, a.hit.counts);
    ASSERT_EQ(b.ae_level.samples, a.ae_level.samples);
  }
  nlohmann::json st = nlohmann::json::object();
  split->add_status(st);
  ASSERT_EQ(st["devices"].size(), 2u);
  EXPECT_EQ(st["devices"][0]["device"], 0);
  EXPECT_EQ(st["devices"][1]["device"], 0);
  EXPECT_EQ(st["backend"], "cuda");
}

// The direct form cuts the taps by the lane count (cuda/fir_direct_cuda.cpp) and the automatic
// form is chosen by it: 1 023 taps x 2 048 frames x 14 lanes is past the direct form's products,
// 8 lanes (a part's 4 channels) is not. The parts lay out and choose as the whole does.
TEST(ChannelSplitStageCuda, AFirBankInBothFormsSplitInTwoGivesTheWholeBanksBands) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::pair<const char*, int> cases[] = {{"direct", 255}, {"fft", 255}, {"auto", 1023}};
  for (const auto& [form, taps] : cases) {
    SCOPED_TRACE(form);
    const StageSettings s = test::stage_of(test::two_band_bank(taps, form), "rate_hz: 48000, channels: 7");
    const uint32_t total = 40000;
    expect_split_is_whole(s, {48000, 7, 1, {""}, 0}, 2, 2048, noise(7, total, std::random_device{}()), total,
                          {2048, 1000, 333});
  }
}

// Each GPU part's status says what GPU memory it took (its device's free memory before and after
// it prepared): at least its input and bands on the device, at most the device's memory.
TEST(ChannelSplitStageCuda, EachPartSaysHowMuchDeviceMemoryItTook) {
  VIGIL_SKIP_WITHOUT_GPU();
  const StageSettings s = test::stage_of(test::two_band_bank(255, "direct"), "rate_hz: 48000, channels: 7");
  const uint32_t max_frames = 262144;  // 1 MiB a lane: the parts' buffers are tens of MiB
  std::unique_ptr<Stage> split = make_split_stage(s, 1, 2, gpu_backend({0, 0}));
  split->prepare({48000, 7, 1, {""}, 0}, max_frames);
  nlohmann::json st = nlohmann::json::object();
  split->add_status(st);
  ASSERT_EQ(st["devices"].size(), 2u);
  for (const nlohmann::json& part : st["devices"]) {
    SCOPED_TRACE(part.dump());
    ASSERT_TRUE(part.contains("device_memory_bytes"));
    const auto lanes_bytes = part["channels"].get<uint64_t>() * max_frames * sizeof(float);
    EXPECT_GE(part["device_memory_bytes"].get<uint64_t>(), 3 * lanes_bytes) << "its input and two bands";
    EXPECT_LT(part["device_memory_bytes"].get<uint64_t>(), part["device_memory_total_bytes"].get<uint64_t>());
  }
}

TEST(ChannelSplitStageCuda, ADenoiserOverABanksBandsSplitInTwoGivesTheWholeDenoisersSamples) {
  VIGIL_SKIP_WITHOUT_GPU();
  const StageSettings s = test::stage_of(test::two_band_bank(63) + R"(  - name: den
    kind: wavelet_denoise
    input: bands
    window: 1024
)",
                                   "rate_hz: 48000, channels: 5");
  const uint32_t total = 40000;
  expect_split_is_whole(s, {48000, 5, 2, {"low", "high"}, 0}, 2, 4096, noise(10, total, std::random_device{}()),
                        total, {4096, 1500});
}

TEST(ChannelSplitStageCuda, AeHitsSplitInTwoGiveTheWholeStagesHitsInTheSameOrder) {
  VIGIL_SKIP_WITHOUT_GPU();
  const StageSettings s = test::stage_of(R"(  - name: hits
    kind: ae_hits
    input: input
    threshold_db: 45
    preamp_gain_db: 20
    level_interval_s: 0.01
)",
                                   "rate_hz: 2000000, channels: 7");
  const uint32_t total = 300000;
  expect_split_is_whole(s, {2e6, 7, 2, {"a", "b"}, 0}, 0, 65536,
                        test::ae_lanes(2e6, 14, total, std::random_device{}(), 5), total, {65536, 1000, 30000}, 200);
}

// Part 1 fails at its 4th chunk: its channels go on on its CPU twin, part 0's stay on the GPU;
// every sample is still the filter's (the twin's, to float rounding), the fallback event names
// the part, and the status counts the error on that part alone.
TEST(ChannelSplitStageCuda, APartsLaunchFailureHandsItsChannelsToItsTwinAlone) {
  VIGIL_SKIP_WITHOUT_GPU();
  const StageSettings s = test::stage_of(R"(  - name: bands
    kind: fir_bank
    input: input
    taps: 127
    form: direct
    bands: [{name: low, type: lowpass, cutoff_hz: 3000}]
)",
                                   "rate_hz: 48000, channels: 6");
  int made = 0;
  ChannelSplitStage split({0, 0}, [&](int) {
    StageBackend b = gpu_backend();
    if (made++ == 1) b.fail_at_chunk = 4;
    return make_stage(s, 1, true, b);
  });
  std::unique_ptr<Stage> whole = make_stage(s, 1, true, gpu_backend());
  const StreamFormat in{48000, 6, 1, {""}, 0};
  split.prepare(in, 1024);
  whole->prepare(in, 1024);
  const uint32_t total = 20000;
  const std::vector<float> x = noise(6, total, std::random_device{}());
  const test::StageRun a = test::run_stage(*whole, {6, 1, 1, 1024}, x, total, {1024, 500});
  const test::StageRun b = test::run_stage(split, {6, 1, 1, 1024}, x, total, {1024, 500});
  ASSERT_EQ(a.out.size(), b.out.size());
  for (uint32_t c = 0; c < 6; ++c) {
    const std::vector<float> wa(a.out.begin() + size_t(c) * total, a.out.begin() + size_t(c + 1) * total);
    const std::vector<float> wb(b.out.begin() + size_t(c) * total, b.out.begin() + size_t(c + 1) * total);
    EXPECT_LE(test::rel_l2(wb, wa), 1e-6) << "channel " << c;
    if (c < 3) {
      EXPECT_EQ(wb, wa) << "channel " << c << " (part 0, still on the GPU)";
    }
  }
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].kind, EventKind::kBackendFallback);
  EXPECT_EQ(b.events[0].channel, 3u);
  nlohmann::json body;
  split.describe_event(b.events[0], body);
  EXPECT_EQ(body["state"], "fallback");
  EXPECT_EQ(body["device"], 0);
  EXPECT_EQ(body["first_channel"], 3);
  EXPECT_EQ(body["channels"], 3);
  nlohmann::json st = nlohmann::json::object();
  split.add_status(st);
  EXPECT_EQ(st["devices"][0]["backend"], "cuda");
  EXPECT_EQ(st["devices"][1]["backend"], "cpu (fallback)");
  EXPECT_EQ(st["devices"][0]["cuda_errors"], 0);
  EXPECT_EQ(st["devices"][1]["cuda_errors"], 1);
  EXPECT_EQ(st["cuda_errors"], 1);
  EXPECT_EQ(st["backend"], "cuda | cpu (fallback)");
}

}  // namespace
}  // namespace vigil
