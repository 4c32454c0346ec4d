// A graph whose stages' channels are split over pipeline.gpus (three parts here, CPU parts: the
// CPU backend splits a list of two or more the same way) gives every stream and every event of
// the graph unsplit: an AE chain (bank, denoiser, hits on the bands) and a vibration stage that
// stays whole, over random input in chunks of the configured size, through a reload.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "../support/ae_lanes.hpp"
#include "config/config_loader.hpp"
#include "core/spsc_queue.hpp"
#include "pipeline/graph.hpp"
#include "stages/channel_split_stage.hpp"
#include "stages/event_record.hpp"

namespace vigil {
namespace {

const char* kConfig = R"(source: {rate_hz: 2000000, channels: 7, chunk_frames: 4096}
stages:
  - name: band
    kind: fir_bank
    input: input
    taps: 63
    form: direct
    bands:
      - {name: ae, type: bandpass, low_hz: 100000, high_hz: 400000}
      - {name: low, type: lowpass, cutoff_hz: 100000}
  - name: clean
    kind: wavelet_denoise
    input: band
    wavelet: db4
    window: 512
  - name: hits
    kind: ae_hits
    input: band
    threshold_db: 45
    preamp_gain_db: 20
    level_interval_s: 0.002
  - name: vib
    kind: vibration
    input: input
    window_s: 0.001
    hop_s: 0.0005
    full_scale_v: 10
    sensitivity_mv_per_g: 100
)";

struct GraphRun {
  std::vector<std::vector<float>> streams;  // per stream, every chunk's lanes appended
  std::vector<EventRecord> events;
};

GraphRun run_graph(const Settings& settings, std::vector<int> devices, const std::vector<float>& x, uint32_t total,
              const StageSettings& reloaded) {
  GraphBackend backend;
  backend.devices = std::move(devices);
  Graph g(settings.stages, backend);
  StreamFormat in;
  in.rate_hz = 2e6;
  in.channels = 7;
  const uint32_t chunk = 4096;
  g.prepare(in, chunk);
  SpscQueue<EventRecord> events(16384);
  std::atomic<uint64_t> dropped{0};
  GraphRun r;
  r.streams.resize(g.stream_count());
  uint64_t k = 0;
  for (uint32_t at = 0; at + chunk <= total; at += chunk, ++k) {
    if (k == 20) {  // the bank's bands move: a reload that keeps the structure, crossfaded
      std::vector<StageSettings> next = settings.stages;
      next[0] = reloaded;
      std::string why;
      const auto update = g.plan_update(settings.stages, next, why);
      EXPECT_TRUE(update) << why;
      if (update) {
        EXPECT_EQ(g.apply_update(*update), -1);
      }
    }
    Block& b = g.input_block();
    b.frames = chunk;
    for (uint32_t c = 0; c < 7; ++c) std::copy_n(x.data() + size_t(c) * total + at, chunk, b.lane(0, c));
    Exec exec;
    exec.chunk = {at, int64_t(at) * 500, k};
    exec.events = &events;
    exec.events_dropped = &dropped;
    EXPECT_EQ(g.run(exec), StageStatus::kOk);
    for (size_t s = 0; s < g.stream_count(); ++s) {
      const Block& o = g.stream(s).block;
      for (uint32_t l = 0; l < o.bands * o.channels; ++l)
        r.streams[s].insert(r.streams[s].end(), o.data + size_t(l) * o.stride, o.data + size_t(l) * o.stride + o.frames);
    }
    EventRecord ev;
    while (events.pop(ev)) r.events.push_back(ev);
  }
  EXPECT_EQ(dropped.load(), 0u);
  return r;
}

TEST(GraphSplit, StagesSplitOverThreePartsGiveEveryStreamAndEventOfTheWholeGraph) {
  const ConfigResult cfg = parse_config(kConfig, "split.yaml");
  ASSERT_TRUE(cfg.settings) << format_error("split.yaml", cfg.errors[0]);
  StageSettings reloaded = cfg.settings->stages[0];
  std::get<FirBankSettings>(reloaded.params).bands[0].f1_hz = 150000;
  const uint32_t total = 4096 * 40;
  const std::vector<float> x = test::ae_lanes(2e6, 7, total, std::random_device{}(), 3);

  const GraphRun whole = run_graph(*cfg.settings, {}, x, total, reloaded);
  const GraphRun split = run_graph(*cfg.settings, {-1, -1, -1}, x, total, reloaded);
  ASSERT_EQ(split.streams.size(), whole.streams.size());
  for (size_t s = 0; s < whole.streams.size(); ++s) {
    ASSERT_EQ(split.streams[s].size(), whole.streams[s].size()) << "stream " << s;
    size_t differ = 0;
    for (size_t i = 0; i < whole.streams[s].size(); ++i) differ += split.streams[s][i] != whole.streams[s][i];
    EXPECT_EQ(differ, 0u) << "stream " << s << " of " << whole.streams[s].size() << " samples";
  }
  size_t hits = 0, vibration = 0;
  for (const EventRecord& e : whole.events) {
    hits += e.kind == EventKind::kAeHit;
    vibration += e.kind == EventKind::kVibration;
  }
  EXPECT_GT(hits, 50u);
  EXPECT_GT(vibration, 200u);
  ASSERT_EQ(split.events.size(), whole.events.size());
  for (size_t i = 0; i < whole.events.size(); ++i) {
    const EventRecord &a = whole.events[i], &b = split.events[i];
    SCOPED_TRACE("event " + std::to_string(i));
    ASSERT_EQ(b.kind, a.kind);
    ASSERT_EQ(b.stage, a.stage);
    ASSERT_EQ(b.band, a.band);
    ASSERT_EQ(b.channel, a.channel);
    ASSERT_EQ(b.frame, a.frame);
    ASSERT_EQ(b.t_utc_ns, a.t_utc_ns);
    ASSERT_EQ(b.hit.peak, a.hit.peak);
    ASSERT_EQ(b.hit.counts, a.hit.counts);
  }
}

TEST(GraphSplit, OnlyTheStagesWhoseLanesAreIndependentAreSplit) {
  const ConfigResult cfg = parse_config(kConfig, "split.yaml");
  ASSERT_TRUE(cfg.settings) << format_error("split.yaml", cfg.errors[0]);
  GraphBackend backend;
  backend.devices = {-1, -1};
  Graph g(cfg.settings->stages, backend);
  StreamFormat in;
  in.rate_hz = 2e6;
  in.channels = 7;
  g.prepare(in, 4096);
  for (const char* name : {"band", "clean", "hits"}) {
    const auto* split = dynamic_cast<const ChannelSplitStage*>(&g.stage(size_t(g.find_stage(name))));
    ASSERT_NE(split, nullptr) << name;
    EXPECT_EQ(split->parts(), 2u);
    EXPECT_EQ(split->range(1).first, 4u);
    EXPECT_EQ(split->range(1).count, 3u);
    nlohmann::json st = nlohmann::json::object();
    split->add_status(st);
    EXPECT_EQ(st["devices"].size(), 2u) << name;
  }
  EXPECT_EQ(dynamic_cast<const ChannelSplitStage*>(&g.stage(size_t(g.find_stage("vib")))), nullptr);
}

}  // namespace
}  // namespace vigil
