// The output thread's events: a chunk's worth of stage events formatted on the send pool
// (pipeline.send_threads > 1) arrive as one thread sends them: every event, in order, seq after
// seq, with the same fields. Real sockets on loopback, a real graph (ae_hits on the CPU).
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/spsc_queue.hpp"
#include "config/config_loader.hpp"
#include "stages/event_record.hpp"
#include "pipeline/graph.hpp"
#include "sinks/output_slot.hpp"
#include "pipeline/output_worker.hpp"
#include "../support/udp_receiver.hpp"

namespace vigil {
namespace {

Settings settings_to(uint16_t port, uint32_t send_threads) {
  const std::string yaml = R"(source: {kind: synthetic, rate_hz: 10000000, channels: 16, format: int16, chunk_frames: 65536}
pipeline: {backend: cpu, send_threads: )" + std::to_string(send_threads) + R"(}
stages:
  - {name: hits, kind: ae_hits, input: input, threshold_db: 45, hdt_us: 800, pdt_us: 200, hlt_us: 1000,
     full_scale_v: 10, preamp_gain_db: 40, level_interval_s: 1}
outputs:
  - {kind: events, destination: "127.0.0.1:)" + std::to_string(port) +
                           R"(", status_interval_s: 100, framing: lines, jumbo: true}
)";
  ConfigResult r = parse_config(yaml, "output_worker_events_test");
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors.front().message);
  return *r.settings;
}

// Hits and levels with random features, an alarm-kind event the AE stage writes through JSON
// (not as text), and the pipeline's own overload event in the middle of the run.
std::vector<EventRecord> chunk_events(size_t n) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> ch(0, 15), len(50, 9000);
  std::uniform_real_distribution<float> peak(0.002f, 0.9f);
  const int64_t t0 = utc_now_ns() - 3'000'000;
  std::vector<EventRecord> out;
  for (size_t i = 0; i < n; ++i) {
    EventRecord ev;
    ev.channel = ch(rng);
    ev.frame = 1000 * i + ch(rng);
    ev.t_utc_ns = t0 + int64_t(100 * ev.frame);
    if (i == n / 2) {
      ev.kind = EventKind::kOverload;
      ev.level = 1;
      ev.value = 3;
    } else if (i % 97 == 5) {
      ev.kind = EventKind::kAlarmRaised;
    } else if (i % 10 == 9) {
      ev.kind = EventKind::kAeLevel;
      ev.ae_level.channel = ev.channel;
      ev.ae_level.end_frame = ev.frame;
      ev.ae_level.samples = 10'000'000;
      ev.ae_level.sum_sq = 0.01 * peak(rng);
    } else {
      ev.kind = EventKind::kAeHit;
      ev.hit.channel = ev.channel;
      ev.hit.arrival_frame = ev.frame;
      ev.hit.peak_frame = ev.frame + len(rng) / 10;
      ev.hit.end_frame = ev.frame + len(rng);
      ev.hit.peak = peak(rng);
      ev.hit.threshold = 0.00178f;
      ev.hit.counts = len(rng) / 100;
      ev.hit.counts_to_peak = 2;
      ev.hit.sum_sq = double(peak(rng)) * 100;
      ev.hit.sum_abs = double(peak(rng)) * 1000;
      ev.hit.truncated = i % 13 == 0;
    }
    out.push_back(ev);
  }
  return out;
}

// The events one OutputWorker sends for `events` queued at once, then a chunk, then the end, and
// the datagrams they came in.
struct Sent {
  std::vector<nlohmann::json> events;
  uint64_t datagrams = 0;
};

Sent sent(const std::vector<EventRecord>& events, uint32_t send_threads) {
  test::UdpSocket no_data, rx;
  const Settings settings = settings_to(rx.port, send_threads);
  Graph graph(settings.stages);
  StreamFormat input;
  input.rate_hz = 10e6;
  input.channels = 16;
  graph.prepare(input, 65536);
  SpscQueue<OutputSlot*> full(4), free_slots(4);
  SpscQueue<EventRecord> queue(events.size() + 4);
  OutputWorker::Options opt;
  opt.rate_hz = 10e6;
  opt.deadline_budget_ns = 6'553'600;
  opt.send_threads = send_threads;
  opt.status_fields = [] { return nlohmann::json::object(); };
  std::atomic<bool> finished{false};
  opt.upstream_finished = [&] { return finished.load(); };
  OutputWorker worker(settings, graph, {}, full, free_slots, queue, std::move(opt));
  for (const EventRecord& ev : events) EXPECT_TRUE(queue.push(ev));
  OutputSlot slot;
  slot.header.frames = slot.frames = 65536;
  slot.header.t_capture_mono_ns = slot.t_processed_mono_ns = slot.t_dequeued_mono_ns = mono_now_ns();
  full.push(&slot);
  finished = true;
  worker.run();
  EXPECT_EQ(worker.counters().send_errors.load(), 0u);
  test::Received r;
  r.keep_timestamps = false;
  std::atomic<bool> stop{true};  // everything is sent: read until the sockets stay quiet
  test::receive(no_data, rx, r, stop);
  return {std::move(r.events), r.event_datagrams};
}

TEST(OutputWorkerEvents, FormattedOnTheSendPoolTheyArriveAsFromOneThread) {
  const std::vector<EventRecord> events = chunk_events(3000);
  const Sent sent_one = sent(events, 1), sent_four = sent(events, 4);
  std::vector<nlohmann::json> one = sent_one.events, four = sent_four.events;
  // start, the 3000 events, the final status: every seq once, in order.
  ASSERT_EQ(one.size(), events.size() + 2);
  ASSERT_EQ(four.size(), one.size());
  size_t hits = 0, levels = 0, alarms = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(four[i]["seq"], i) << four[i].dump();
    ASSERT_EQ(one[i]["seq"], i);
    if (i == 0 || i + 1 == one.size()) continue;  // start and status: their own times and counters
    one[i].erase("time");  // when it was sent
    four[i].erase("time");
    ASSERT_EQ(four[i], one[i]) << "event " << i;
    const std::string type = one[i]["type"];
    hits += type == "ae_hit";
    levels += type == "ae_level";
    alarms += type == "alarm";
  }
  // The kinds went through both paths: text (hits, levels) and a JSON body (alarms, overload).
  EXPECT_GT(hits, 2000u);
  EXPECT_GT(levels, 200u);
  EXPECT_GT(alarms, 20u);
  EXPECT_EQ(one[1 + events.size() / 2]["type"], "overload");
  EXPECT_GT(four[5]["amplitude_db"].get<double>(), 0.0);
  // Queued all at once, the events go as lines, each jumbo datagram as full as whole events make
  // it (a hit's line is ~300 bytes: ~20 of 64 queued events to a datagram of 9 000 bytes).
  EXPECT_LT(sent_one.datagrams * 10, one.size()) << "lines did not pack the events";
  EXPECT_LT(sent_four.datagrams * 10, four.size()) << "lines did not pack the events";
}

}  // namespace
}  // namespace vigil
