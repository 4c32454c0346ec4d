// The output thread's cost per AE event (issue 9, S1): a chunk's hits, as the GPU's AE stage queues
// them all at once, formatted as text and sent in jumbo `lines` datagrams to a receiver draining
// them on loopback. Each run: a real OutputWorker over S1's graph (CPU backend) with N queued
// hits and one chunk, run() timed from start to its return (start and final status events
// included: compare N = 0 with the others; the `per_event_us` counter subtracts nothing), with
// pipeline.send_threads 1 (the output thread formats every event) and more (a chunk's events
// formatted on the send pool).
// Usage: build/bench/event_output_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/spsc_queue.hpp"
#include "config/config_loader.hpp"
#include "stages/event_record.hpp"
#include "pipeline/graph.hpp"
#include "sinks/output_slot.hpp"
#include "pipeline/output_worker.hpp"
#include "loopback_receiver.hpp"

namespace {

vigil::Settings s1_settings(uint16_t port) {
  const std::string yaml = R"(source: {kind: synthetic, rate_hz: 10000000, channels: 16, format: int16, chunk_frames: 65536}
pipeline: {backend: cpu}
stages:
  - {name: hits, kind: ae_hits, input: input, threshold_db: 45, hdt_us: 800, pdt_us: 200, hlt_us: 1000,
     full_scale_v: 10, preamp_gain_db: 40, level_interval_s: 1}
outputs:
  - {kind: events, destination: "127.0.0.1:)" + std::to_string(port) +
                           R"(", status_interval_s: 1, framing: lines, jumbo: true}
)";
  vigil::ConfigResult r = vigil::parse_config(yaml, "event_output_bench");
  if (!r.settings) throw std::runtime_error("config: " + r.errors.front().message);
  return *r.settings;
}

void BM_AeEventsOfOneChunk(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const uint32_t send_threads = uint32_t(state.range(1));
  vigil::bench::LoopbackReceiver drain;
  const vigil::Settings settings = s1_settings(drain.port);
  vigil::Graph graph(settings.stages);
  vigil::StreamFormat input;
  input.rate_hz = 10e6;
  input.channels = 16;
  graph.prepare(input, 65536);
  vigil::SpscQueue<vigil::OutputSlot*> full(4), free_slots(4);
  vigil::SpscQueue<vigil::EventRecord> events(n + 16);
  vigil::OutputSlot slot;
  double total_s = 0;
  for (auto _ : state) {
    std::atomic<bool> finished{false};
    vigil::OutputWorker::Options opt;
    opt.rate_hz = 10e6;
    opt.deadline_budget_ns = 6'553'600;
    opt.send_threads = send_threads;
    opt.status_fields = [] { return nlohmann::json::object(); };
    opt.upstream_finished = [&] { return finished.load(); };
    vigil::OutputWorker worker(settings, graph, {}, full, free_slots, events, std::move(opt));
    const int64_t t_chunk = vigil::utc_now_ns() - 5'000'000;  // as captured: a few milliseconds ago
    for (size_t i = 0; i < n; ++i) {
      vigil::EventRecord ev;
      ev.kind = vigil::EventKind::kAeHit;
      ev.channel = uint32_t(i % 16);
      ev.frame = 1000 * i;
      ev.t_utc_ns = t_chunk + int64_t(100 * i);
      ev.hit.channel = ev.channel;
      ev.hit.arrival_frame = ev.frame;
      ev.hit.peak_frame = ev.frame + 137 + i % 11;
      ev.hit.end_frame = ev.frame + 5011 + i % 97;
      ev.hit.peak = 0.0431f + 1e-5f * float(i % 101);
      ev.hit.threshold = 0.00178f;
      ev.hit.counts = 41 + uint32_t(i % 13);
      ev.hit.counts_to_peak = 3;
      ev.hit.sum_sq = 0.731 + 1e-4 * double(i);
      ev.hit.sum_abs = 61.2 + 1e-3 * double(i);
      if (!events.push(ev)) throw std::runtime_error("event queue full");
    }
    slot.header.frames = 65536;
    slot.frames = 65536;
    slot.header.t_capture_mono_ns = slot.t_processed_mono_ns = slot.t_dequeued_mono_ns = vigil::mono_now_ns();
    full.push(&slot);
    finished = true;  // run() drains what is queued, then returns
    const int64_t t0 = vigil::mono_now_ns();
    worker.run();
    const double s = double(vigil::mono_now_ns() - t0) * 1e-9;
    state.SetIterationTime(s);
    total_s += s;
    vigil::OutputSlot* back = nullptr;
    while (free_slots.pop(back)) {
    }
  }
  state.counters["per_event_us"] = n ? 1e6 * total_s / double(state.iterations() * n) : 0.0;
}

BENCHMARK(BM_AeEventsOfOneChunk)
    ->ArgNames({"hits", "send_threads"})
    ->ArgsProduct({{0, 500, 1000}, {1, 2, 4}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
