// The vibration stage in a graph: one `vibration` event per lane per hop at the window's last
// frame, the ISO zone of each lane's known velocity, and the exact alarm sequence that the
// velocity profile, hysteresis, on/off delays and latching (with acknowledge) call for.
#include "stages/vibration_stage.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "../support/moments_run.hpp"
#include "../support/tolerances.hpp"
#include "core/spsc_queue.hpp"
#include "config/config_loader.hpp"
#include "stages/event_record.hpp"
#include "wire/event_text.hpp"
#include "pipeline/graph.hpp"

namespace vigil {
namespace {

constexpr double kRate = 25600;
constexpr uint32_t kChunk = 1024;

const char* kConfig = R"(source: {rate_hz: 25600, channels: 4, chunk_frames: 1024}
stages:
  - name: vib
    kind: vibration
    input: input
    window_s: 1.0
    hop_s: 0.5
    full_scale_v: 10
    sensitivity_mv_per_g: 100
    velocity: true
    iso_20816: {group: 2, foundation: rigid}
    rules:
      - {name: velocity, metric: velocity_rms, alert: 2.8, danger: 4.5, hysteresis: 0.5, on_delay_s: 1.0, off_delay_s: 1.0}
      - {name: latched, metric: velocity_rms, alert: 2.8, latch: true}
)";

// Sample value of an 80 Hz acceleration sine of velocity RMS v (mm/s), 100 mV/g, 10 V full scale.
float sample(double v_mm_s, uint64_t n) {
  const double f = 80, a_peak = v_mm_s * 1e-3 * std::sqrt(2.0) * 2 * std::numbers::pi * f;
  return float(a_peak * std::sin(2 * std::numbers::pi * f * double(n) / kRate) * (0.100 / 9.80665) / 10.0);
}

double channel_velocity(uint32_t c, double t) {
  switch (c) {
    case 0: return t >= 4 && t < 10 ? 3.5 : 1.0;  // alert from 4 s to 10 s
    case 1: return 6.0;                           // zone D throughout
    case 2: return 2.0;                           // zone B
    default: return 1.0;                          // zone A
  }
}

TEST(VibrationStage, MetricsZonesAndTheAlarmSequence) {
  const ConfigResult cfg = parse_config(kConfig, "vib.yaml");
  ASSERT_TRUE(cfg.settings) << format_error("vib.yaml", cfg.errors[0]);
  Graph g(cfg.settings->stages);
  StreamFormat in;
  in.rate_hz = kRate;
  in.channels = 4;
  g.prepare(in, kChunk);
  SpscQueue<EventRecord> events(4096);
  std::atomic<uint64_t> dropped{0};
  std::vector<EventRecord> got;
  uint64_t frame = 0;
  bool acked = false;
  while (frame < uint64_t(17 * kRate)) {
    if (!acked && frame >= uint64_t(14 * kRate)) {
      g.acknowledge();
      acked = true;
    }
    Block& b = g.input_block();
    b.frames = kChunk;
    for (uint32_t c = 0; c < 4; ++c)
      for (uint32_t i = 0; i < kChunk; ++i) b.lane(0, c)[i] = sample(channel_velocity(c, double(frame + i) / kRate), frame + i);
    Exec exec;
    exec.chunk = {frame, int64_t(frame) * 1'000'000'000 / int64_t(kRate), frame / kChunk};
    exec.events = &events;
    exec.events_dropped = &dropped;
    ASSERT_EQ(g.run(exec), StageStatus::kOk);
    EventRecord ev;
    while (events.pop(ev)) got.push_back(ev);
    frame += kChunk;
  }
  EXPECT_EQ(dropped.load(), 0u);

  // The output thread writes these events as text (write_event): the same fields and values as
  // the JSON bodies describe_event gives, metrics (with the ISO zone) and alarms alike.
  EventText text;
  for (const EventRecord& e : got) {
    nlohmann::json body;
    g.stage(0).describe_event(e, body);
    text.begin();
    ASSERT_NE(text_writer(g.stage(0)), nullptr);
    ASSERT_TRUE(text_writer(g.stage(0))->write_event(e, text));
    text.end();
    ASSERT_EQ(nlohmann::json::parse(text.str()), body) << text.str();
  }

  // Window k ends at frame 25599 + 12800 k.
  std::vector<std::vector<EventRecord>> metrics(4);
  std::vector<EventRecord> alarms;
  for (const EventRecord& e : got) (e.kind == EventKind::kVibration ? metrics[e.channel] : alarms).push_back(e);
  for (uint32_t c = 0; c < 4; ++c) {
    SCOPED_TRACE(c);
    ASSERT_GE(metrics[c].size(), 32u);
    for (size_t k = 0; k < metrics[c].size(); ++k) {
      const EventRecord& e = metrics[c][k];
      ASSERT_EQ(e.frame, 25599u + 12800u * k);
      const double t_end = double(e.frame + 1) / kRate;
      if (c != 0 || (t_end >= 5 && t_end <= 10) || t_end <= 4 || t_end >= 11) {  // windows of one velocity
        const double v = channel_velocity(c, t_end - 0.5);
        EXPECT_NEAR(e.vibration[VibrationMetric::kVelocityRms], v, 0.01 * v) << "window ending " << t_end;
        EXPECT_EQ(e.vibration.zone, v < 1.4 ? 'A' : v < 2.8 ? 'B' : v < 4.5 ? 'C' : 'D');
      }
    }
  }

  struct Want {
    uint32_t channel;
    uint16_t rule;
    EventKind kind;
    AlarmLevel to;
    uint64_t frame;  // where the condition first held
    double threshold;
  };
  const std::vector<Want> want = {
      {1, 1, EventKind::kAlarmRaised, AlarmLevel::kAlert, 25599, 2.8},   // no delay: the first window
      {1, 0, EventKind::kAlarmRaised, AlarmLevel::kDanger, 25599, 4.5},  // held 1 s: reported at 51199
      {0, 1, EventKind::kAlarmRaised, AlarmLevel::kAlert, 127999, 2.8},  // window 4..5 s
      {0, 0, EventKind::kAlarmRaised, AlarmLevel::kAlert, 127999, 2.8},  // on-delay: reported at 6 s
      {0, 0, EventKind::kAlarmCleared, AlarmLevel::kNormal, 281599, 2.3},  // window 10..11 s; off-delay
      {0, 1, EventKind::kAlarmCleared, AlarmLevel::kNormal, 371199, 2.8 - 0.14},  // first window after ack
  };
  ASSERT_EQ(alarms.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(alarms[i].channel, want[i].channel);
    EXPECT_EQ(alarms[i].rule, want[i].rule);
    EXPECT_EQ(alarms[i].kind, want[i].kind);
    EXPECT_EQ(AlarmLevel(alarms[i].level), want[i].to);
    EXPECT_EQ(alarms[i].frame, want[i].frame);
    EXPECT_NEAR(alarms[i].threshold, want[i].threshold, test::kDoubleFormulaRel);
  }
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// Many lanes, so the stage spreads their analyses over the following chunks: every window each
// lane reports must be the analyzer's result on that lane's input samples of the window (the
// window waits in the lane's ring, or as its segments' moments, until its analysis).
// Runs a 64-lane vibration stage over random input in chunks of 1000 frames and checks every
// event against the analyzer run directly on that lane's window. Time statistics from segment
// moments are a different summation of the same samples: equal to 1e-12 relative (a window off
// by even one sample of this input differs by > 1e-5); peak and peak-to-peak exactly; velocity
// exactly (it comes from the same unrolled window either way).
void check_windows_against_the_analyzer(const std::string& stage, bool stats_by_segments, uint32_t threads = 1) {
  const ConfigResult cfg = parse_config("source: {rate_hz: 25600, channels: 64, chunk_frames: 1000}\nstages:\n  - " +
                                        stage + "\n", "vib.yaml");
  ASSERT_TRUE(cfg.settings) << format_error("vib.yaml", cfg.errors[0]);
  GraphBackend backend;
  backend.cpu_threads = threads;
  Graph g(cfg.settings->stages, backend);
  StreamFormat in;
  in.rate_hz = kRate;
  in.channels = 64;
  g.prepare(in, 1000);
  VibrationAnalyzer direct(std::get<VibrationStageSettings>(cfg.settings->stages[0].params).analysis, kRate);
  const uint32_t window = direct.window(), hop = direct.hop();
  const uint64_t total = 60000;
  std::vector<std::vector<float>> x(64, std::vector<float>(total));
  uint32_t seed = 5;
  for (auto& lane : x)
    for (auto& v : lane) {
      seed = seed * 1664525u + 1013904223u;
      v = float(double(seed >> 8) / double(1 << 24) - 0.5);
    }
  for (uint32_t c = 0; c < 64; ++c)  // a DC offset on some lanes: the moments must not cancel
    for (auto& v : x[c]) v += float(c % 4) * 10.0f;
  SpscQueue<EventRecord> events(65536);
  std::atomic<uint64_t> dropped{0};
  std::vector<EventRecord> got;
  for (uint64_t frame = 0; frame < total; frame += 1000) {
    Block& b = g.input_block();
    b.frames = 1000;
    for (uint32_t c = 0; c < 64; ++c) std::copy_n(x[c].begin() + frame, 1000, b.lane(0, c));
    Exec exec;
    exec.chunk = {frame, int64_t(frame) * 1'000'000'000 / int64_t(kRate), frame / 1000};
    exec.events = &events;
    exec.events_dropped = &dropped;
    ASSERT_EQ(g.run(exec), StageStatus::kOk);
    EventRecord ev;
    while (events.pop(ev)) got.push_back(ev);
  }
  EXPECT_EQ(dropped.load(), 0u);
  size_t checked = 0;
  VibrationMetrics want;
  for (const EventRecord& e : got) {
    ASSERT_EQ(e.kind, EventKind::kVibration);
    ASSERT_EQ((e.frame + 1 - window) % hop, 0u) << e.frame;
    direct.analyze(x[e.channel].data() + (e.frame + 1 - window), want);
    for (size_t m = 0; m < want.value.size(); ++m) {
      if (std::isnan(want.value[m])) {
        EXPECT_TRUE(std::isnan(e.vibration.value[m])) << m;
        continue;
      }
      const auto metric = VibrationMetric(m);
      const bool summed = metric == VibrationMetric::kRms || metric == VibrationMetric::kCrestFactor ||
                          metric == VibrationMetric::kKurtosis;
      if (summed && stats_by_segments)
        ASSERT_NEAR(e.vibration.value[m], want.value[m], test::kDoubleSumRel * std::fabs(want.value[m]))
            << to_string(metric) << ", channel " << e.channel << " frame " << e.frame;
      else
        ASSERT_EQ(e.vibration.value[m], want.value[m])
            << to_string(metric) << ", channel " << e.channel << " frame " << e.frame;
    }
    ++checked;
  }
  // Every lane, every window that completed with time left to analyse it.
  EXPECT_GE(checked, 64u * ((total - window) / hop));
}

TEST(VibrationStage, DeferredAnalysesSeeExactlyTheirWindow) {
  // 4096-sample windows every 2048: statistics from two segments of 2048 per window.
  check_windows_against_the_analyzer("{name: vib, kind: vibration, input: input, window_s: 0.16, hop_s: 0.08}", true);
}

TEST(VibrationStage, LanesSplitOverThreadsGiveTheSameWindows) {
  check_windows_against_the_analyzer("{name: vib, kind: vibration, input: input, window_s: 0.16, hop_s: 0.08}", true, 3);
  check_windows_against_the_analyzer("{name: vib, kind: vibration, input: input, window_s: 0.16, hop_s: 0.078125}",
                                     false, 2);
}

TEST(VibrationStage, WindowsWithoutACommonSegmentUseTheRing) {
  // hop 2000 and window 4096 share only 16 samples: statistics from the ring's two pieces.
  check_windows_against_the_analyzer("{name: vib, kind: vibration, input: input, window_s: 0.16, hop_s: 0.078125}",
                                     false);
}

TEST(VibrationStage, SegmentStatisticsBesideTheSpectralMetrics) {
  // Velocity needs the window in order (the ring, unrolled); the statistics still from segments.
  check_windows_against_the_analyzer(
      "{name: vib, kind: vibration, input: input, window_s: 0.16, hop_s: 0.08, full_scale_v: 10, "
      "sensitivity_mv_per_g: 100, velocity: true}",
      true);
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// What the CUDA twin relies on (pipeline/moments_cuda_stage), checked on the CPU: cutting each chunk
// where cut() says and handing process_moments() every lane's moments_of() of those runs gives
// exactly process()'s events, for chunks of 1 to 8192 frames; where cut() returns 0 (more runs
// than asked for) the chunk goes through process() as the twin does it.
TEST(VibrationStage, ProcessMomentsOfTheCutRunsGivesProcessesEvents) {
  constexpr double rate = 25600;
  constexpr uint32_t channels = 3, bands = 2, lanes = channels * bands, total = 4 * 25600, max_chunk = 8192;
  VibrationStageSettings s;
  s.analysis.window_s = 0.04;   // 1024 samples
  s.analysis.hop_s = 0.0025;    // 64: segments of 64, so an 8192-frame chunk has 128 runs
  VibrationRuleSettings rms{"level", VibrationMetric::kRms, {}};
  rms.levels.alert = 0.8;
  VibrationRuleSettings kurt{"impacts", VibrationMetric::kKurtosis, {}};
  kurt.levels.alert = 4;
  s.rules = {rms, kurt};
  std::mt19937 rng(5);
  std::normal_distribution<float> noise;
  std::vector<float> x(size_t(lanes) * total);
  for (uint32_t l = 0; l < lanes; ++l)
    for (uint32_t i = 0; i < total; ++i) {
      const double level = 0.4 + 0.8 * std::fabs(std::sin(3.0 * double(i) / total * (1 + l)));
      x[size_t(l) * total + i] = float(0.1 * l + level * noise(rng)) + (i % 1999 == 0 && l % 2 ? 7.0f : 0.0f);
    }
  const StreamFormat in{rate, channels, bands, {"a", "b"}, 0};
  VibrationStage plain(s, 1), by_moments(s, 1);
  plain.prepare(in, max_chunk);
  by_moments.prepare(in, max_chunk);
  ASSERT_TRUE(by_moments.sums_segments());
  const test::MomentsRun run =
      test::run_plain_and_by_moments(plain, by_moments, x, total, channels, bands, max_chunk, {1000, 8192, 1, 777, 64, 4096});
  const std::vector<EventRecord>& want = run.want;
  const std::vector<EventRecord>& got = run.got;
  EXPECT_EQ(run.dropped, 0u);
  EXPECT_GT(run.cut_chunks, 10u);
  EXPECT_GT(run.whole_chunks, 5u);  // the 8192-frame chunks
  size_t alarms = 0;
  for (const EventRecord& e : want) alarms += e.kind != EventKind::kVibration;
  EXPECT_GT(alarms, 20u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(got[i].kind, want[i].kind);
    ASSERT_EQ(got[i].band, want[i].band);
    ASSERT_EQ(got[i].channel, want[i].channel);
    ASSERT_EQ(got[i].frame, want[i].frame);
    EXPECT_EQ(got[i].value, want[i].value);
    for (size_t m = 0; m < kVibrationMetricCount; ++m) {
      const double g = got[i].vibration.value[m], w = want[i].vibration.value[m];
      EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w))) << "metric " << m << ": " << g << " vs " << w;
    }
  }
}

}  // namespace
}  // namespace vigil
