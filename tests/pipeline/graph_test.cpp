// The graph from a config: FIR bank into band RMS; alarms raised above threshold only, cleared
// below the clear level, with the crossing sample's index.
#include "pipeline/graph.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/spsc_queue.hpp"
#include "config/config_loader.hpp"
#include "stages/event_record.hpp"

namespace vigil {
namespace {

const char* kConfig = R"(source: {rate_hz: 8000, channels: 2, chunk_frames: 400}
stages:
  - name: bands
    kind: fir_bank
    input: input
    taps: 101
    bands:
      - {name: low, type: lowpass, cutoff_hz: 1000}
      - {name: high, type: highpass, cutoff_hz: 2000}
  - name: alarm
    kind: band_rms
    input: bands
    window_s: 0.05
    threshold: 0.2
    clear_threshold: 0.1
)";

TEST(Graph, BandRmsRaisesAboveThresholdOnlyAndClears) {
  const ConfigResult cfg = parse_config(kConfig, "graph.yaml");
  ASSERT_TRUE(cfg.settings) << format_error("graph.yaml", cfg.errors[0]);
  Graph g(cfg.settings->stages);
  StreamFormat in;
  in.rate_hz = 8000;
  in.channels = 2;
  g.prepare(in, 400);
  ASSERT_EQ(g.stream_count(), 2u);
  EXPECT_EQ(g.stream(1).name, "bands");
  EXPECT_EQ(g.stream(1).format.bands, 2u);
  EXPECT_EQ(g.find_stream("alarm"), -1);  // a detector has no sample stream

  SpscQueue<EventRecord> events(64);
  std::atomic<uint64_t> dropped{0};
  // 2 s of a 300 Hz tone: amplitude 0.5 on channel 0 (RMS 0.354), 0.2 on channel 1 (RMS 0.141);
  // then 1 s of silence.
  uint64_t frame = 0;
  for (int k = 0; k < 60; ++k) {
    Block& b = g.input_block();
    b.frames = 400;
    for (uint32_t i = 0; i < 400; ++i) {
      const double s = k < 40 ? std::sin(2 * std::numbers::pi * 300 * double(frame + i) / 8000) : 0.0;
      b.lane(0, 0)[i] = float(0.5 * s);
      b.lane(0, 1)[i] = float(0.2 * s);
    }
    Exec exec;
    exec.chunk = {frame, int64_t(frame) * 125'000, uint64_t(k)};
    exec.events = &events;
    exec.events_dropped = &dropped;
    ASSERT_EQ(g.run(exec), StageStatus::kOk);
    frame += 400;
  }
  // 101 taps exceed the direct form: one FFT block of at most a chunk (400) delays the bands.
  const uint32_t delay = g.stream(1).format.delay_frames;
  EXPECT_EQ(delay, 156u);  // FFT 256, block 256 - 101 + 1 (512 would need a 412-frame block)
  const Block& bands = g.stream(1).block;
  EXPECT_NEAR(bands.lane(0, 0)[399], 0.0f, 1e-3);  // silence by now

  std::vector<EventRecord> got;
  EventRecord ev;
  while (events.pop(ev)) got.push_back(ev);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kind, EventKind::kAlarmRaised);
  EXPECT_EQ(got[0].channel, 0u);
  EXPECT_EQ(got[0].band, 0u);
  EXPECT_EQ(g.stage_input_band_name(got[0].stage, got[0].band), "low");
  EXPECT_EQ(g.stage_name(got[0].stage), "alarm");
  // The first 400-sample window (output frames 0..399, holding input 0..243) already exceeds
  // 0.2; events name the input frame, so the window's end is reported as 399 - delay.
  EXPECT_EQ(got[0].frame, 399u - delay);
  EXPECT_GT(got[0].value, 0.2);
  EXPECT_DOUBLE_EQ(got[0].threshold, 0.2);
  EXPECT_EQ(got[0].t_utc_ns, int64_t(399 - delay) * 125'000);
  EXPECT_EQ(got[1].kind, EventKind::kAlarmCleared);
  EXPECT_EQ(got[1].channel, 0u);
  // The tone stops at input frame 16000 (plus the filter's 50-sample group delay); the first
  // window that is quiet enough ends on a window boundary of the output, after that.
  EXPECT_EQ((got[1].frame + delay + 1) % 400, 0u);
  EXPECT_GT(got[1].frame, 16000u);
  EXPECT_LT(got[1].frame, 16000u + 800u);
  EXPECT_LT(got[1].value, 0.1);
  EXPECT_EQ(dropped.load(), 0u);
}

TEST(Graph, UnknownInputIsRejectedAtPrepare) {
  StageSettings s;
  s.name = "x";
  s.kind = "fir_bank";
  s.input = "nothing";
  FirBankSettings f;
  f.bands = {{"b", FilterType::kLowpass, 100, 0}};
  s.params = f;
  Graph g({s});
  StreamFormat in;
  in.rate_hz = 1000;
  in.channels = 1;
  EXPECT_THROW(g.prepare(in, 16), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
