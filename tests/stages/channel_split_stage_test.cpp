// A stage split into parts by channel ranges (pipeline.gpus: one part a device) gives what the
// stage gives over all channels: every output sample to the bit, every event with its values in
// the same order. Checked here with CPU parts for each kind that splits (fir_bank with crossfading
// reload, wavelet_denoise over a bank's bands, ae_hits, vibration with alarms), through odd chunk
// sizes; the CUDA parts are the same stage on a device (tests/stages/*_cuda_test.cpp).
#include "stages/channel_split_stage.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "../support/ae_lanes.hpp"
#include "../support/signals.hpp"
#include "../support/stage_config.hpp"
#include "../support/stage_run.hpp"
#include "stages/stage_factory.hpp"
#include "wire/event_text.hpp"

namespace vigil {
namespace {

TEST(SplitChannels, ContiguousRangesInOrderAsEvenAsCanBe) {
  const std::vector<ChannelRange> r = split_channels(10, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].first, 0u);
  EXPECT_EQ(r[0].count, 4u);
  EXPECT_EQ(r[1].first, 4u);
  EXPECT_EQ(r[1].count, 3u);
  EXPECT_EQ(r[2].first, 7u);
  EXPECT_EQ(r[2].count, 3u);
  EXPECT_EQ(split_channels(2, 4).size(), 2u);  // no empty part
  EXPECT_TRUE(split_channels(0, 2).empty());
  EXPECT_TRUE(split_channels(5, 0).empty());
  std::mt19937 rng(std::random_device{}());
  for (int t = 0; t < 200; ++t) {
    const uint32_t channels = 1 + rng() % 1024;
    const size_t parts = 1 + rng() % 70;
    const std::vector<ChannelRange> s = split_channels(channels, parts);
    ASSERT_EQ(s.size(), std::min<size_t>(parts, channels));
    uint32_t next = 0, lo = channels, hi = 0;
    for (const ChannelRange& c : s) {
      ASSERT_EQ(c.first, next);
      ASSERT_GT(c.count, 0u);
      lo = std::min(lo, c.count);
      hi = std::max(hi, c.count);
      next += c.count;
    }
    EXPECT_EQ(next, channels);
    EXPECT_LE(hi - lo, 1u) << channels << " channels in " << parts;
  }
}

StageSettings stage_of(const std::string& stage_yaml, const std::string& source = "rate_hz: 48000, channels: 7") {
  return test::stage_of(stage_yaml, source);
}

// The stage alone and split into `parts` CPU parts, over the same input.
struct Pair {
  std::unique_ptr<Stage> alone;
  std::unique_ptr<ChannelSplitStage> split;
};
Pair make_pair_of(const StageSettings& s, size_t parts) {
  const StageBackend cpu;
  Pair p;
  p.alone = make_stage(s, 2, false, cpu);
  p.split = std::make_unique<ChannelSplitStage>(std::vector<int>(parts, -1),
                                                [&](int) { return make_stage(s, 2, false, cpu); });
  return p;
}

// lanes x total samples of N(0, 0.3^2).
std::vector<float> noise(uint32_t lanes, uint32_t total, uint32_t seed) {
  return test::randn(size_t(lanes) * total, seed, 0.3f);
}

void expect_same_events(const test::StageRun& alone, const test::StageRun& split) {
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
    ASSERT_EQ(b.value, a.value);
    ASSERT_EQ(b.level, a.level);
    ASSERT_EQ(b.rule, a.rule);
    ASSERT_EQ(b.hit.arrival_frame, a.hit.arrival_frame);
    ASSERT_EQ(b.hit.peak, a.hit.peak);
    ASSERT_EQ(b.hit.counts, a.hit.counts);
    ASSERT_EQ(b.ae_level.samples, a.ae_level.samples);
    for (size_t m = 0; m < kVibrationMetricCount; ++m)  // NaN where not computed: the same bits
      ASSERT_EQ(std::memcmp(&b.vibration.value[m], &a.vibration.value[m], sizeof(double)), 0) << "metric " << m;
  }
}

void expect_same_output(const test::StageRun& alone, const test::StageRun& split) {
  ASSERT_EQ(split.out.size(), alone.out.size());
  size_t differ = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < alone.out.size(); ++i)
    if (split.out[i] != alone.out[i]) {
      if (!differ++) first = i;
      worst = std::max(worst, double(std::fabs(split.out[i] - alone.out[i])));
    }
  EXPECT_EQ(differ, 0u) << "of " << alone.out.size() << " samples; the first at " << first << ", the largest difference "
                        << worst;
}

// The direct form: each channel's output its own (the FFT forms on the CPU stagger their channels'
// blocks by the channel count, so parts of fewer channels round and crossfade at other samples;
// the CUDA forms run aligned).
TEST(ChannelSplitStage, AFirBankSplitInThreeGivesTheSameBandsThroughAReload) {
  const StageSettings s = stage_of(test::two_band_bank(255, "direct"));
  StageSettings next = s;
  std::get<FirBankSettings>(next.params).bands[0].f1_hz = 5000;
  std::get<FirBankSettings>(next.params).bands[1].f1_hz = 5000;
  const uint32_t channels = 7, total = 30000, max_frames = 2048;
  const std::vector<float> x = noise(channels, total, std::random_device{}());
  Pair p = make_pair_of(s, 3);
  test::StageRun runs[2];
  Stage* stages[2] = {p.alone.get(), p.split.get()};
  for (int k = 0; k < 2; ++k) {
    const StreamFormat out = stages[k]->prepare({48000, channels, 1, {""}, 0}, max_frames);
    ASSERT_EQ(out.channels, channels);
    ASSERT_EQ(out.bands, 2u);
    runs[k] = test::run_stage(*stages[k], {channels, 1, 2, max_frames}, x, total, {1000, 2048, 333},
                              [&](uint64_t chunk) {
                                if (chunk != 5) return;
                                StageUpdatePlan plan = stages[k]->plan_update(next);
                                ASSERT_FALSE(plan.structural) << plan.why;
                                ASSERT_TRUE(plan.update);
                                EXPECT_TRUE(stages[k]->apply_update(*plan.update));
                              });
  }
  EXPECT_EQ(p.split->parts(), 3u);
  EXPECT_EQ(p.split->range(2).first, 5u);
  expect_same_output(runs[0], runs[1]);
  nlohmann::json st = nlohmann::json::object();
  p.split->add_status(st);
  ASSERT_EQ(st["devices"].size(), 3u);
  EXPECT_EQ(st["devices"][1]["first_channel"], 3);
  EXPECT_EQ(st["devices"][1]["channels"], 2);
  EXPECT_FALSE(st["devices"][1].contains("device"));  // CPU parts
  nlohmann::json alone = nlohmann::json::object();
  p.alone->add_status(alone);
  EXPECT_EQ(st["form"], alone["form"]);
  EXPECT_EQ(st["delay_frames"], alone["delay_frames"]);
}

// An FFT form on the CPU: parts of fewer channels stagger their blocks otherwise (above), but each
// part chooses the same form and delay as the whole, and every band sample is the same filter's
// (to float rounding; no reload here).
TEST(ChannelSplitStage, AnFftBankSplitOnTheCpuKeepsTheWholeBanksFormAndDelay) {
  const StageSettings s = stage_of(test::two_band_bank(2047));
  const uint32_t channels = 7, total = 24000, max_frames = 1024;
  const std::vector<float> x = noise(channels, total, std::random_device{}());
  for (size_t parts : {2u, 3u}) {
    SCOPED_TRACE(std::to_string(parts) + " parts");
    Pair p = make_pair_of(s, parts);
    const StreamFormat whole = p.alone->prepare({48000, channels, 1, {""}, 0}, max_frames);
    const StreamFormat split = p.split->prepare({48000, channels, 1, {""}, 0}, max_frames);
    EXPECT_GT(whole.delay_frames, 0u);  // an FFT form
    EXPECT_EQ(split.delay_frames, whole.delay_frames);
    nlohmann::json a = nlohmann::json::object(), b = nlohmann::json::object();
    p.alone->add_status(a);
    p.split->add_status(b);
    EXPECT_EQ(b["form"], a["form"]);
    const test::StageRun ra = test::run_stage(*p.alone, {channels, 1, 2, max_frames}, x, total, {1024, 700});
    const test::StageRun rb = test::run_stage(*p.split, {channels, 1, 2, max_frames}, x, total, {1024, 700});
    ASSERT_EQ(rb.out.size(), ra.out.size());
    double err = 0, norm = 0;
    for (size_t i = 0; i < ra.out.size(); ++i) {
      err += double(rb.out[i] - ra.out[i]) * double(rb.out[i] - ra.out[i]);
      norm += double(ra.out[i]) * double(ra.out[i]);
    }
    EXPECT_GT(norm, 0.0);
    EXPECT_LE(std::sqrt(err / norm), 1e-6);
  }
}

TEST(ChannelSplitStage, AWaveletDenoiserOverABanksBandsSplitInTwoGivesTheSameSamples) {
  const StageSettings s = stage_of(test::two_band_bank(63) + R"(  - name: den
    kind: wavelet_denoise
    input: bands
    wavelet: db4
    window: 256
)");
  const uint32_t channels = 5, total = 20000, max_frames = 1024;
  const std::vector<float> x = noise(2 * channels, total, std::random_device{}());
  Pair p = make_pair_of(s, 2);
  test::StageRun runs[2];
  Stage* stages[2] = {p.alone.get(), p.split.get()};
  for (int k = 0; k < 2; ++k) {
    const StreamFormat out = stages[k]->prepare({48000, channels, 2, {"low", "high"}, 0}, max_frames);
    ASSERT_EQ(out.bands, 2u);
    EXPECT_EQ(out.band_names, (std::vector<std::string>{"low", "high"}));
    runs[k] = test::run_stage(*stages[k], {channels, 2, 2, max_frames}, x, total, {1024, 700, 77});
  }
  expect_same_output(runs[0], runs[1]);
}

TEST(ChannelSplitStage, AeHitsSplitInThreeGiveTheSameHitsAndLevelsInTheSameOrder) {
  const StageSettings s = stage_of(R"(  - name: hits
    kind: ae_hits
    input: input
    threshold_db: 45
    preamp_gain_db: 20
    level_interval_s: 0.01
)",
                                   "rate_hz: 2000000, channels: 7");
  const uint32_t channels = 7, bands = 2, total = 300000, max_frames = 65536;
  const std::vector<float> x = test::ae_lanes(2e6, bands * channels, total, std::random_device{}(), 5);
  Pair p = make_pair_of(s, 3);
  test::StageRun runs[2];
  Stage* stages[2] = {p.alone.get(), p.split.get()};
  for (int k = 0; k < 2; ++k) {
    stages[k]->prepare({2e6, channels, bands, {"a", "b"}, 0}, max_frames);
    runs[k] = test::run_stage(*stages[k], {channels, bands, 0, max_frames}, x, total, {max_frames, 1000, 30000, 7});
  }
  size_t hits = 0;
  for (const EventRecord& e : runs[0].events) hits += e.kind == EventKind::kAeHit;
  EXPECT_GT(hits, 100u);
  expect_same_events(runs[0], runs[1]);
  // The output thread's text of each event: the part's own, of the event's channel.
  EventText a, b;
  for (size_t i = 0; i < runs[0].events.size(); i += 7) {
    const EventRecord& ev = runs[0].events[i];
    a.begin();
    b.begin();
    ASSERT_TRUE(text_writer(*p.alone)->write_event(ev, a));
    ASSERT_TRUE(p.split->write_event(ev, b));
    ASSERT_EQ(b.str(), a.str()) << "event " << i;
    nlohmann::json ja, jb;
    p.alone->describe_event(ev, ja);
    p.split->describe_event(ev, jb);
    ASSERT_EQ(jb, ja) << "event " << i;
  }
}

// Which stages split, and into how many parts: those whose lanes are independent, one part a
// listed device; a vibration stage (its analyses spread over chunks across all lanes) and hits
// that capture waveforms stay whole.
TEST(ChannelSplitStage, OnlyStagesWhoseLanesAreIndependentAreSplit) {
  StageBackend cpu;
  cpu.devices = {-1, -1, -1};
  const StageSettings bank = stage_of("  - {name: b, kind: fir_bank, input: input, taps: 31, bands: "
                                      "[{name: low, type: lowpass, cutoff_hz: 3000}]}\n");
  const StageSettings vib = stage_of("  - {name: v, kind: vibration, input: input, window_s: 0.25, hop_s: 0.125, "
                                     "full_scale_v: 10, sensitivity_mv_per_g: 100}\n",
                                     "rate_hz: 25600, channels: 5");
  const std::string hits_yaml = "  - {name: h, kind: ae_hits, input: input, threshold_db: 45";
  const StageSettings hits = stage_of(hits_yaml + "}\n", "rate_hz: 2000000, channels: 4");
  const StageSettings captures = stage_of(hits_yaml + ", waveform: {length_us: 500}}\n", "rate_hz: 2000000, channels: 4");
  EXPECT_EQ(stage_parts_over_devices(bank, cpu), 3u);
  EXPECT_EQ(stage_parts_over_devices(hits, cpu), 3u);
  EXPECT_EQ(stage_parts_over_devices(vib, cpu), 0u);
  EXPECT_EQ(stage_parts_over_devices(captures, cpu), 0u);
  cpu.devices = {-1};
  EXPECT_EQ(stage_parts_over_devices(bank, cpu), 0u);  // one part on the CPU is the stage itself
  cpu.devices.clear();
  EXPECT_EQ(stage_parts_over_devices(bank, cpu), 0u);
}

TEST(ChannelSplitStage, MorePartsThanChannelsLeavesNoPartEmpty) {
  const StageSettings s = stage_of(R"(  - name: bands
    kind: fir_bank
    input: input
    taps: 31
    bands: [{name: low, type: lowpass, cutoff_hz: 3000}]
)", "rate_hz: 48000, channels: 2");
  Pair p = make_pair_of(s, 4);
  const StreamFormat out = p.split->prepare({48000, 2, 1, {""}, 0}, 512);
  EXPECT_EQ(out.channels, 2u);
  EXPECT_EQ(p.split->parts(), 2u);
  const std::vector<float> x = noise(2, 5000, 3);
  p.alone->prepare({48000, 2, 1, {""}, 0}, 512);
  expect_same_output(test::run_stage(*p.alone, {2, 1, 1, 512}, x, 5000, {512, 100}),
                     test::run_stage(*p.split, {2, 1, 1, 512}, x, 5000, {512, 100}));
}

}  // namespace
}  // namespace vigil
