// RT-adjacent: output thread. The sinks build data packets in preallocated batches; JSON events
// allocate, which is acceptable here: they are rare and this thread never holds up capture.
#include "pipeline/output_worker.hpp"

#include "core/cpu_relax.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "core/clock.hpp"
#include "core/spsc_queue.hpp"
#include "pipeline/stream_layout.hpp"
#include "sinks/event_udp_sink.hpp"
#if VIGIL_HAVE_NATS
#include "sinks/nats_sink.hpp"
#endif
#include "sinks/vita49_udp_sink.hpp"

namespace vigil {

OutputWorker::OutputWorker(const Settings& settings, const Graph& graph, std::vector<int> stream_of_output,
                           SpscQueue<OutputSlot*>& full_slots, SpscQueue<OutputSlot*>& free_slots,
                           SpscQueue<EventRecord>& events, Options options)
    : graph_(graph), full_slots_(full_slots), free_slots_(free_slots), events_(events), options_(std::move(options)),
      event_batch_(UdpSender::kMaxBatch, kEventBatchBytes),
      start_mono_ns_(mono_now_ns()) {
  for (size_t i = 0; i < graph_.stage_count(); ++i) text_writers_.push_back(text_writer(graph_.stage(i)));
  locators_of_.resize(graph_.stage_count());
  for (size_t i = 0; i < graph_.stage_count() && i < settings.stages.size(); ++i) {
    // Its output-thread part: only this thread calls take_hit() and advance().
    auto* loc = dynamic_cast<AeLocateStage*>(const_cast<Stage*>(&graph_.stage(i)));
    const int input = loc ? graph_.find_stage(settings.stages[i].input) : -1;
    if (input < 0) continue;
    locators_of_[size_t(input)].push_back(loc);
    locators_.emplace_back(uint16_t(i), loc);
  }
  pass_events_.resize(kEventsPerPass);
  event_types_.reserve(UdpSender::kMaxBatch);
  if (options_.send_threads > 1) {
    send_pool_ = std::make_unique<WorkerPool>(options_.send_threads, options_.busy_poll, "vigil-send");
    formatted_.resize(options_.send_threads);
  }
  for (size_t o = 0; o < settings.data_outputs.size(); ++o) {
    Vita49UdpSink::Params p;
    p.settings = settings.data_outputs[o];
    p.output_index = uint32_t(o);
    p.input_rate_hz = options_.rate_hz;
    if (stream_of_output[o] >= 0) {
      p.format = &graph_.stream(size_t(stream_of_output[o])).format;
    } else {  // hit waveforms, of the detector's input lanes
      const int st = graph_.find_stage(p.settings.stream);
      p.waveforms = waveforms_of(graph_.stage(size_t(st)));
      p.format = &graph_.stage_input_format(size_t(st));
    }
    data_formats_.push_back(p.format);
    data_hits_.push_back(p.waveforms != nullptr);
    sinks_.push_back(std::make_unique<Vita49UdpSink>(io_, std::move(p), send_pool_.get(), counters_, log_));
  }
  if (sinks_.size() == 1 && sinks_[0]->batches_chunks()) batching_sink_ = sinks_[0].get();
  for (const EventOutputSettings& e : settings.event_outputs) {
    sinks_.push_back(std::make_unique<EventUdpSink>(io_, e, kEventBatchBytes, counters_, log_));
    ++event_sinks_;
  }
  if (options_.run_id.empty()) {
    std::random_device rd;
    char id[17];
    std::snprintf(id, sizeof id, "%08x%08x", rd(), rd());
    options_.run_id = id;
  }
#if VIGIL_HAVE_NATS
  for (const FleetOutputSettings& f : settings.fleet_outputs) {
    sinks_.push_back(std::make_unique<NatsSink>(f, options_.run_id, counters_));
    ++event_sinks_;
  }
#endif
  for (auto& sink : sinks_)
    if (RtLog* l = sink->own_log()) sink_logs_.push_back(l);
  misses_by_ = std::make_unique<std::atomic<uint64_t>[]>(graph_.stage_count() + 2);
  update_layout(settings);
}

void OutputWorker::update_layout(const Settings& settings) {
  nlohmann::json layout = stream_layout(settings, data_formats_, data_hits_);
  const std::lock_guard<std::mutex> lock(layout_mutex_);
  layout_ = std::move(layout);
}

OutputWorker::~OutputWorker() = default;

void OutputWorker::send_slots(OutputSlot* first) noexcept {
  std::array<OutputSlot*, kMaxTogether> slots{};
  std::array<int64_t, kMaxTogether> started{};
  const bool together = batching_sink_ != nullptr;
  size_t n = 0;
  for (OutputSlot* slot = first; slot;) {
    slots[n] = slot;
    started[n] = mono_now_ns();
    for (auto& sink : sinks_) sink->send_chunk(*slot, !together);
    ++n;
    if (!together || n == kMaxTogether || !full_slots_.pop(slot)) slot = nullptr;
  }
  if (together) batching_sink_->flush();  // what the chunks left in the batch, in one call
  const int64_t done = mono_now_ns();
  if (n > 0) sent_frame_end_ = slots[n - 1]->header.first_frame + slots[n - 1]->header.frames;
  for (size_t i = 0; i < n; ++i) {
    account_sent(*slots[i], started[i], done);
    free_slots_.push(slots[i]);  // cannot fail: the free queue holds every slot
  }
  if (n > 1) counters_.chunks_sent_together.fetch_add(n - 1, std::memory_order_relaxed);
}

void OutputWorker::account_sent(const OutputSlot& slot, int64_t started, int64_t done) noexcept {
  const ChunkHeader& h = slot.header;
  counters_.end_to_end.record_ns(done - h.t_capture_mono_ns);
  counters_.queued.record_ns(slot.t_dequeued_mono_ns - h.t_capture_mono_ns);
  counters_.handed_over.record_ns(started - slot.t_processed_mono_ns);
  counters_.sending.record_ns(done - started);
  if (done > h.t_capture_mono_ns + options_.deadline_budget_ns) {
    counters_.deadline_misses.fetch_add(1, std::memory_order_relaxed);
    // The culprit: the longest of waiting for the pipeline, the slowest stage, and sending.
    const int64_t queued = slot.t_dequeued_mono_ns - h.t_capture_mono_ns, sending = done - slot.t_processed_mono_ns;
    size_t culprit = queued >= sending ? 0 : 1;
    if (slot.slowest_stage >= 0 && slot.slowest_stage_ns > std::max(queued, sending)) culprit = 2 + size_t(slot.slowest_stage);
    misses_by_[culprit].fetch_add(1, std::memory_order_relaxed);
  }
  if (first_out_mono_ns_.load(std::memory_order_relaxed) == 0) {
    first_out_frames_.store(slot.frames, std::memory_order_relaxed);
    first_out_mono_ns_.store(done, std::memory_order_release);  // publishes the frames above
  }
  last_out_mono_ns_.store(done, std::memory_order_relaxed);
  counters_.chunks_sent.fetch_add(1, std::memory_order_relaxed);
  counters_.frames_sent.fetch_add(slot.frames, std::memory_order_relaxed);
}

void OutputWorker::send_event(std::string_view type, nlohmann::json body, int64_t utc_ns) noexcept {
  if (event_sinks_ == 0) return;
  try {
    send_event_text(type, encoder_.encode(std::string(type), std::move(body), utc_ns));
  } catch (...) {  // out of memory while formatting: the event is lost, and counted
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void OutputWorker::send_event_text(std::string_view type, std::string_view text) noexcept {
  if (event_sinks_ == 0) return;
  if (batching_events_ && text.size() <= event_batch_.max_bytes()) {
    if (event_batch_.full()) flush_events();
    std::memcpy(event_batch_.next(), text.data(), text.size());
    event_batch_.commit(text.size());
    event_types_.push_back(type);  // cannot allocate: reserved for a full batch
    return;
  }
  flush_events();  // what was queued goes first
  for (auto& sink : sinks_) sink->send_event(type, text);
}

void OutputWorker::flush_events() noexcept {
  if (event_batch_.size() == 0) return;
  const int64_t t0 = mono_now_ns();
  for (auto& sink : sinks_) sink->send_events({event_batch_, event_types_});
  event_batch_.clear();
  event_types_.clear();
  pass_send_ns_ += mono_now_ns() - t0;
}

void OutputWorker::send_event_record(const EventRecord& ev) noexcept {
  try {
    if (ev.kind == EventKind::kSourceOverrun || ev.kind == EventKind::kClockStep) {
      nlohmann::json body;
      if (ev.kind == EventKind::kSourceOverrun) {
        body["state"] = "overrun";
        body["frames_lost"] = uint64_t(ev.value);
      } else {
        body["state"] = "clock_step";
        body["step_s"] = ev.value;  // how far the time line moved (negative: back)
      }
      body["frame"] = ev.frame;  // the first frame after the gap, or on the new time line
      body["sample_time"] = rfc3339_utc(ev.t_utc_ns);
      send_event("source", std::move(body), utc_now_ns());
      return;
    }
    if (ev.kind == EventKind::kOverload) {  // the pipeline's own, not a stage's
      nlohmann::json body;
      body["state"] = ev.level ? "shedding" : "restored";
      body["stages"] = graph_.optional_stages();
      body["misses_last_s"] = ev.value;
      body["frame"] = ev.frame;
      body["sample_time"] = rfc3339_utc(ev.t_utc_ns);
      send_event("overload", std::move(body), utc_now_ns());
      return;
    }
    if (ev.kind == EventKind::kBackendFallback) {  // the stage adds state and the error
      nlohmann::json body;
      body["stage"] = graph_.stage_name(ev.stage);
      body["frame"] = ev.frame;  // the first chunk the CPU twin filtered
      body["sample_time"] = rfc3339_utc(ev.t_utc_ns);
      graph_.stage(ev.stage).describe_event(ev, body);
      send_event("backend", std::move(body), utc_now_ns());
      return;
    }
    if (event_sinks_) send_event_text(stage_event_type(ev.kind), stage_event_text(ev, event_text_, event_json_, encoder_.reserve(1)));
    count_event(ev);
  } catch (...) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string_view OutputWorker::stage_event_text(const EventRecord& ev, EventText& text, std::string& json,
                                                uint64_t seq) const {
  const char* type = stage_event_type(ev.kind);
  // The stage's own fields and those every stage event has: as text where the stage writes it
  // so (AE hits and levels, thousands a second), else through a JSON body.
  auto common = [&](auto& out) {
    out.field("stage", graph_.stage_name(ev.stage));
    out.field("band", graph_.stage_input_band_name(ev.stage, ev.band));
    out.field("channel", ev.channel);
    out.field("frame", ev.frame);
    out.time_field("sample_time", ev.t_utc_ns);
  };
  const Stage& stage = graph_.stage(ev.stage);
  text.begin();
  const EventTextWriter* writer = ev.stage < text_writers_.size() ? text_writers_[ev.stage] : nullptr;
  if (writer && writer->write_event(ev, text)) {
    common(text);
    return EventEncoder::finish_with(type, text, utc_now_ns(), seq);
  }
  nlohmann::json body;
  JsonFields fields{body};
  common(fields);
  stage.describe_event(ev, body);
  json = EventEncoder::encode_with(type, std::move(body), utc_now_ns(), seq);
  return json;
}

const char* OutputWorker::stage_event_type(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::kAlarmRaised:
    case EventKind::kAlarmCleared: break;  // the stage adds state, rule and level
    case EventKind::kAeHit: return "ae_hit";
    case EventKind::kAeLevel: return "ae_level";
    case EventKind::kVibration: return "vibration";
    case EventKind::kOverload:
    case EventKind::kSourceOverrun:
    case EventKind::kBackendFallback:
    case EventKind::kClockStep: break;  // the pipeline's own: send_event_record
  }
  return "alarm";
}

void OutputWorker::count_event(const EventRecord& ev) noexcept {
  const size_t by = ev.kind == EventKind::kAeHit ? 1 : ev.kind == EventKind::kAeLevel ? 2 : ev.kind == EventKind::kVibration ? 3 : 0;
  events_by_type_[by].fetch_add(1, std::memory_order_relaxed);
  if (ev.kind == EventKind::kAeHit && ev.stage < locators_of_.size() && !locators_of_[ev.stage].empty()) locate_hit(ev);
}

void OutputWorker::locate_hit(const EventRecord& ev) noexcept {
  try {
    nlohmann::json fields;  // amplitude and energy, as the hit's own stage computes them
    graph_.stage(ev.stage).describe_event(ev, fields);
    for (AeLocateStage* loc : locators_of_[ev.stage]) loc->take_hit(ev, fields);
  } catch (...) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void OutputWorker::advance_locators(uint64_t frame_end) noexcept {
  for (auto& [index, loc] : locators_) {
    try {
      located_.clear();
      loc->advance(frame_end, located_);
      for (AeLocateStage::Located& e : located_) {
        nlohmann::json body = std::move(e.body);
        body["stage"] = graph_.stage_name(index);
        body["frame"] = e.frame;
        body["sample_time"] = rfc3339_utc(e.t_utc_ns);
        const bool alarm = std::string_view(e.type) == "alarm";
        send_event(e.type, std::move(body), utc_now_ns());
        events_by_type_[alarm ? 0 : 4].fetch_add(1, std::memory_order_relaxed);
      }
    } catch (...) {
      counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool OutputWorker::pipeline_event(EventKind kind) noexcept {
  return kind == EventKind::kSourceOverrun || kind == EventKind::kOverload || kind == EventKind::kBackendFallback ||
         kind == EventKind::kClockStep;
}

void OutputWorker::send_stage_events_in_parallel(const EventRecord* ev, uint32_t n) noexcept {
  const uint64_t seq0 = encoder_.reserve(n);
  const uint32_t parts = std::min(send_pool_->threads(), (n + kEventsPerPart - 1) / kEventsPerPart);
  auto format_part = [&](uint32_t part) {
    FormattedEvents& f = formatted_[part];
    f.bytes.clear();
    f.ends.clear();
    const WorkerPool::Range r = WorkerPool::range(n, parts, part);
    for (uint32_t i = r.first; i < r.end; ++i) {
      try {
        f.bytes += stage_event_text(ev[i], f.text, f.json, seq0 + i);
        f.ends.push_back(uint32_t(f.bytes.size()));
      } catch (...) {  // out of memory: this one is lost (its seq is missing) and counted
        f.ends.push_back(f.ends.empty() ? 0u : f.ends.back());
        counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
      }
    }
  };
  send_pool_->run(parts, format_part);
  for (uint32_t part = 0; part < parts; ++part) {  // in their order, as one thread would have sent them
    const FormattedEvents& f = formatted_[part];
    uint32_t start = 0, i = WorkerPool::range(n, parts, part).first;
    for (const uint32_t end : f.ends) {
      if (end > start) send_event_text(stage_event_type(ev[i].kind), std::string_view(f.bytes.data() + start, end - start));
      start = end;
      ++i;
    }
  }
  for (uint32_t i = 0; i < n; ++i) count_event(ev[i]);
}

bool OutputWorker::drain_events() noexcept {
  for (bool any = false;; any = true) {
    uint32_t n = 0;
    while (n < kEventsPerPass && events_.pop(pass_events_[n])) ++n;
    if (n == 0) return any;
    for (uint32_t i = 0; i < n;) {
      // A run of stage events long enough to share: formatted on the send pool, sent in order.
      uint32_t j = i;
      while (j < n && !pipeline_event(pass_events_[j].kind)) ++j;
      if (send_pool_ && event_sinks_ && j - i >= kEventsPerPart * 2) {
        send_stage_events_in_parallel(&pass_events_[i], j - i);
        i = j;
        continue;
      }
      send_event_record(pass_events_[i++]);
    }
  }
}

void OutputWorker::post_event(const std::string& type, nlohmann::json body) {
  const std::lock_guard<std::mutex> lock(posted_mutex_);
  posted_.emplace_back(type, std::move(body));
}

nlohmann::json OutputWorker::status_json(bool final_report) const {
  nlohmann::json j = options_.status_fields ? options_.status_fields() : nlohmann::json::object();
  j["final"] = final_report;
  j["uptime_s"] = double(mono_now_ns() - start_mono_ns_) / 1e9;
  if (std::unique_lock<std::mutex> lock(layout_mutex_, std::try_to_lock); lock) j["layout"] = layout_;
  j["chunks_out"] = counters_.chunks_sent.load(std::memory_order_relaxed);
  const uint64_t frames_out = counters_.frames_sent.load(std::memory_order_relaxed);
  j["frames_out"] = frames_out;
  // Frames out a second from the first chunk out to the latest: the sustained rate, without the
  // start (planning, the first chunk's capture) that frames_out / uptime_s counts.
  const int64_t first = first_out_mono_ns_.load(std::memory_order_acquire);
  const int64_t last = last_out_mono_ns_.load(std::memory_order_relaxed);
  const uint64_t after_first = frames_out - first_out_frames_.load(std::memory_order_relaxed);
  j["frames_out_per_s"] = first && last > first ? double(after_first) * 1e9 / double(last - first) : 0.0;
  j["packets_sent"] = counters_.packets_sent.load(std::memory_order_relaxed);
  j["context_packets_sent"] = counters_.context_packets_sent.load(std::memory_order_relaxed);
  j["bytes_sent"] = counters_.bytes_sent.load(std::memory_order_relaxed);
  j["send_errors"] = counters_.send_errors.load(std::memory_order_relaxed);
  j["events_sent"] = counters_.events_sent.load(std::memory_order_relaxed);
  // Per destination, by cause (send_errors above is their sum over every destination).
  uint64_t refused = 0, buffer_full = 0;
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& sink : sinks_) {
    const SinkStatus st = sink->describe();
    refused += st.refused;
    buffer_full += st.buffer_full;
    nlohmann::json o{{"kind", st.kind},
                     {"destination", st.destination},
                     {"datagrams", st.datagrams},
                     {"refused", st.refused},
                     {"buffer_full", st.buffer_full},
                     {"other_errors", st.other_errors}};
    if (!st.stream.empty()) o["stream"] = st.stream;
    for (const auto& [name, value] : st.counts) o[name] = value;
    for (const auto& [name, value] : st.facts) o[name] = value;
    outputs.push_back(std::move(o));
  }
  j["send_refused"] = refused;
  j["send_buffer_full"] = buffer_full;
  j["outputs"] = std::move(outputs);
  j["deadline_misses"] = counters_.deadline_misses.load(std::memory_order_relaxed);
  j["chunks_sent_together"] = counters_.chunks_sent_together.load(std::memory_order_relaxed);
  auto quantiles = [](const LatencyHistogram& l) {
    return nlohmann::json{{"p50", l.quantile_us(0.5)}, {"p99", l.quantile_us(0.99)}, {"p999", l.quantile_us(0.999)},
                          {"max", l.max_us()}};
  };
  j["latency_us"] = quantiles(counters_.end_to_end);
  j["latency_parts_us"] = {{"queued", quantiles(counters_.queued)},
                           {"handed_over", quantiles(counters_.handed_over)},
                           {"sending", quantiles(counters_.sending)}};
  j["event_passes_us"] = quantiles(counters_.event_passes);
  j["event_sends_us"] = quantiles(counters_.event_sends);
  j["deadline_misses_by"] = {{"capture_queue", misses_by_[0].load(std::memory_order_relaxed)},
                             {"output", misses_by_[1].load(std::memory_order_relaxed)}};
  for (size_t i = 0; i < graph_.stage_count(); ++i) {
    nlohmann::json& st = j["stages"][graph_.stage_name(i)];
    st["time_us"] = quantiles(graph_.stage_time(i));
    st["deadline_misses"] = misses_by_[2 + i].load(std::memory_order_relaxed);
  }
  j["events_by_type"] = {{"alarm", events_by_type_[0].load(std::memory_order_relaxed)},
                         {"ae_hit", events_by_type_[1].load(std::memory_order_relaxed)},
                         {"ae_level", events_by_type_[2].load(std::memory_order_relaxed)},
                         {"vibration", events_by_type_[3].load(std::memory_order_relaxed)},
                         {"ae_event", events_by_type_[4].load(std::memory_order_relaxed)}};
  return j;
}

void OutputWorker::housekeeping(bool final_report) noexcept {
  const int64_t now = mono_now_ns();
  for (auto& sink : sinks_) sink->housekeeping(now);
  // A source that goes away raises one alarm; its return clears it.
  if (options_.source_down) {
    const bool down = options_.source_down();
    if (down != source_was_down_) {
      source_was_down_ = down;
      try {
        send_event("alarm", {{"state", down ? "raised" : "cleared"}, {"rule", "source_down"},
                             {"stage", "source"}, {"source", options_.source_kind}, {"band", ""}, {"channel", 0}},
                   utc_now_ns());
      } catch (...) {
        counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  if (final_report)
    for (auto& sink : sinks_) sink->settle();
  for (auto& sink : sinks_) {
    if (!sink->status_due(now, final_report)) continue;
    try {
      sink->send_event("status", encoder_.encode("status", status_json(final_report), utc_now_ns()));
    } catch (...) {
      counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void OutputWorker::run() noexcept {
  try {
    nlohmann::json layout;
    {
      const std::lock_guard<std::mutex> lock(layout_mutex_);
      layout = layout_;
    }
    send_event("start", {{"version", VIGIL_VERSION}, {"rate_hz", options_.rate_hz}, {"layout", std::move(layout)}},
               utc_now_ns());
  } catch (...) {  // out of memory while copying the layout: the start event is lost, and counted
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
  auto drain = [&] {
    bool did = false;
    if (posted_mutex_.try_lock()) {  // never wait here: a poster holds it only to append
      std::vector<std::pair<std::string, nlohmann::json>> posted;
      posted.swap(posted_);
      posted_mutex_.unlock();
      for (auto& [type, body] : posted) send_event(type, std::move(body), utc_now_ns());
      did = did || !posted.empty();
    }
    batching_events_ = true;
    const int64_t t_events = mono_now_ns();
    pass_send_ns_ = 0;
    const bool any = drain_events();
    if (!locators_.empty()) advance_locators(sent_frame_end_);
    flush_events();  // before the chunk's data: the events go out as soon as before
    batching_events_ = false;
    if (any) {
      counters_.event_passes.record_ns(mono_now_ns() - t_events);
      counters_.event_sends.record_ns(pass_send_ns_);
      did = true;
    }
    for (auto& sink : sinks_)
      if (sink->poll()) did = true;
    OutputSlot* slot = nullptr;
    if (full_slots_.pop(slot)) {
      send_slots(slot);
      did = true;
    }
    return did;
  };
  for (;;) {
    const bool did = drain();
    housekeeping(false);
    if (did) continue;
    // upstream_finished() acquires what the pipeline thread released when it finished.
    if (options_.upstream_finished && options_.upstream_finished()) {
      while (drain()) {
      }
      if (!locators_.empty()) {  // the end of the input: every open event closes
        advance_locators(std::numeric_limits<uint64_t>::max());
        flush_events();
      }
      break;
    }
    // Sleep until the pipeline thread hands over a chunk (its push wakes this thread at once);
    // events without a chunk (reloads, status, the end) are looked at within the timeout, which
    // stays short for the same reason as the pipeline thread's (pipeline_worker.cpp).
    if (options_.busy_poll)
      cpu_relax();
    else
      full_slots_.wait_for_item(100'000);
  }
  housekeeping(true);
}

}  // namespace vigil
