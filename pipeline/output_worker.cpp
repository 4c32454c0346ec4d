// RT-adjacent: output thread. Data packets are built in one preallocated buffer; JSON events
// allocate, which is acceptable here: they are rare and this thread never holds up capture.
#include "pipeline/output_worker.hpp"

#include "core/cpu_relax.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/clock.hpp"
#include "core/spsc_queue.hpp"
#include "pipeline/stream_layout.hpp"
#include "wire/vita49.hpp"
#include "stages/waveform_channel.hpp"

namespace vigil {

OutputWorker::OutputWorker(const Settings& settings, const Graph& graph, std::vector<int> stream_of_output,
                           SpscQueue<OutputSlot*>& full_slots, SpscQueue<OutputSlot*>& free_slots,
                           SpscQueue<EventRecord>& events, Options options)
    : graph_(graph), full_slots_(full_slots), free_slots_(free_slots), events_(events), options_(std::move(options)),
      batch_(UdpSender::kMaxBatch, vita49::kMaxJumboDatagram),
      event_batch_(UdpSender::kMaxBatch, kEventBatchBytes),
      start_mono_ns_(mono_now_ns()) {
  for (size_t i = 0; i < graph_.stage_count(); ++i) text_writers_.push_back(text_writer(graph_.stage(i)));
  for (size_t o = 0; o < settings.data_outputs.size(); ++o) {
    DataOutput d;
    d.settings = settings.data_outputs[o];
    d.sender = std::make_unique<UdpSender>(io_, d.settings.destination, d.settings.multicast);
    d.stream = stream_of_output[o];
    d.output_index = uint32_t(o);
    if (d.stream >= 0) {
      d.format = &graph_.stream(size_t(d.stream)).format;
    } else {
      const int st = graph_.find_stage(d.settings.stream);
      d.waveforms = waveforms_of(graph_.stage(size_t(st)));
      d.format = &graph_.stage_input_format(size_t(st));
    }
    const StreamFormat& f = *d.format;
    if (d.stream >= 0)
      for (uint32_t p = 1; p < options_.send_threads; ++p)
        d.helpers.push_back(std::make_unique<UdpSender>(io_, d.settings.destination, d.settings.multicast));
    d.vrl = d.settings.framing == "vrl";
    d.datagram_bytes = vita49::max_datagram(d.settings.jumbo, d.sender->ipv6());
    d.frame_counts.assign(std::max<uint32_t>(options_.send_threads, 1), 0);
    d.packet_counts.assign(size_t(f.bands) * f.channels, 0);
    d.context_counts.assign(size_t(f.bands) * f.channels, 0);
    data_.push_back(std::move(d));
  }
  pass_events_.resize(kEventsPerPass);
  if (options_.send_threads > 1) {
    send_pool_ = std::make_unique<WorkerPool>(options_.send_threads, options_.busy_poll, "vigil-send");
    formatted_.resize(options_.send_threads);
    for (uint32_t p = 1; p < options_.send_threads; ++p)
      helper_batches_.push_back(std::make_unique<DatagramBatch>(UdpSender::kMaxBatch, vita49::kMaxJumboDatagram));
  }
  frames_.resize(std::max<uint32_t>(options_.send_threads, 1));
  for (const EventOutputSettings& e : settings.event_outputs) {
    event_outputs_.push_back({e, std::make_unique<UdpSender>(io_, e.destination, e.multicast), 0, {}, nullptr});
    if (e.framing == "lines")
      event_outputs_.back().lines = std::make_unique<DatagramBatch>(
          UdpSender::kMaxBatch, std::max(kEventBatchBytes, e.jumbo ? vita49::kMaxJumboDatagram : vita49::kMaxDatagram));
  }
  packet_.resize(vita49::kMaxJumboDatagram);
  misses_by_ = std::make_unique<std::atomic<uint64_t>[]>(graph_.stage_count() + 2);
  update_layout(settings);
}

void OutputWorker::update_layout(const Settings& settings) {
  std::vector<const StreamFormat*> formats;
  std::vector<bool> hits;
  for (const DataOutput& d : data_) {
    formats.push_back(d.format);
    hits.push_back(d.waveforms != nullptr);
  }
  nlohmann::json layout = stream_layout(settings, formats, hits);
  const std::lock_guard<std::mutex> lock(layout_mutex_);
  layout_ = std::move(layout);
}

OutputWorker::~OutputWorker() = default;

void OutputWorker::send_context(DataOutput& out, bool changed) noexcept {
  const StreamFormat& f = *out.format;
  vita49::ContextPacket p;
  vita49::split_ps(__int128(last_utc_ns_) * 1000, p.ts_int, p.ts_frac_ps);
  p.changed = changed;
  p.sample_rate_hz = f.rate_hz / out.settings.decimation;
  for (uint32_t b = 0; b < f.bands; ++b) {
    for (uint32_t c = 0; c < f.channels; ++c) {
      const size_t lane = size_t(b) * f.channels + c;
      p.stream_id = stream_id(out.output_index, b, c);
      p.packet_count = out.context_counts[lane];
      out.context_counts[lane] = uint8_t((out.context_counts[lane] + 1) & 0xF);
      if (out.vrl) {  // into frames with the others, sent together below
        size_t room = 0;
        uint8_t* at = frame_room(out, 0, vita49::kContextBytes, room);
        frames_[0].add(vita49::encode_context(p, at, room));
        continue;
      }
      const size_t n = vita49::encode_context(p, packet_.data(), packet_.size());
      if (out.sender->send(packet_.data(), n)) {
        counters_.context_packets_sent.fetch_add(1, std::memory_order_relaxed);
        counters_.bytes_sent.fetch_add(n, std::memory_order_relaxed);
      } else {
        counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  if (out.vrl) flush(out, 0, true);
}

uint8_t* OutputWorker::frame_room(DataOutput& out, uint32_t part, size_t bytes, size_t& room) noexcept {
  vrl::FrameWriter& fw = frames_[part];
  if (fw.is_open() && fw.room() < bytes) {
    end_frame(out, part);
    if (batch_of(part).full()) flush(out, part);
  }
  if (!fw.is_open()) fw.open(batch_of(part).next(), out.datagram_bytes);
  room = fw.room();
  return fw.cursor();
}

void OutputWorker::end_frame(DataOutput& out, uint32_t part) noexcept {
  vrl::FrameWriter& fw = frames_[part];
  if (!fw.is_open()) return;
  const uint32_t packets = fw.packets();
  batch_of(part).commit(fw.close(out.frame_counts[part]), packets);
  out.frame_counts[part] = uint16_t((out.frame_counts[part] + 1) & 0xFFF);
}

void OutputWorker::send_lane(DataOutput& out, uint32_t band, uint32_t channel, const float* samples, size_t n_total,
                             __int128 t_first_ps, uint32_t first_flags, bool over_range, double rate_hz,
                             uint32_t part) noexcept {
  DatagramBatch& batch = batch_of(part);
  // In a VRL frame, a packet has the datagram's room less the frame's header and trailer.
  const size_t per_packet =
      vita49::max_samples_per_packet(out.datagram_bytes - (out.vrl ? vrl::kOverheadBytes : 0));
  const size_t lane = size_t(band) * out.format->channels + channel;
  vita49::DataPacket p;
  p.stream_id = stream_id(out.output_index, band, channel);
  p.over_range = over_range;
  for (size_t k = 0; k < n_total; k += per_packet) {
    const size_t n = std::min(per_packet, n_total - k);
    // Timestamp of the packet's first sample: exact picoseconds for integer rates.
    vita49::split_ps(t_first_ps + frames_to_ps(k, rate_hz), p.ts_int, p.ts_frac_ps);
    p.sample_loss = k == 0 && (first_flags & chunk_flags::kOverrunBefore);
    p.time_step = k == 0 && (first_flags & chunk_flags::kClockStepped);
    p.packet_count = out.packet_counts[lane];
    out.packet_counts[lane] = uint8_t((out.packet_counts[lane] + 1) & 0xF);
    if (out.vrl) {
      size_t room = 0;
      uint8_t* at = frame_room(out, part, vita49::kDataOverheadBytes + 4 * n, room);
      frames_[part].add(vita49::encode_data(p, samples + k, n, at, room));
      continue;
    }
    batch.commit(vita49::encode_data(p, samples + k, n, batch.next(), batch.max_bytes()));
    if (batch.full()) flush(out, part);
  }
}

void OutputWorker::flush(DataOutput& out, uint32_t part, bool context) noexcept {
  end_frame(out, part);
  DatagramBatch& batch = batch_of(part);
  if (batch.size() == 0) return;
  const UdpSender::BatchResult r = (part ? *out.helpers[part - 1] : *out.sender).send_batch(batch);
  (context ? counters_.context_packets_sent : counters_.packets_sent).fetch_add(r.items, std::memory_order_relaxed);
  counters_.bytes_sent.fetch_add(r.bytes, std::memory_order_relaxed);
  counters_.send_errors.fetch_add(batch.size() - r.sent, std::memory_order_relaxed);
  batch.clear();
}

void OutputWorker::send_lanes(DataOutput& out, const OutputSlot& slot, size_t o, size_t n, __int128 t_first_ps,
                              uint32_t first_flags, bool clipped, double rate_hz, bool flush_now) noexcept {
  const StreamFormat& f = *out.format;
  const uint32_t lanes = f.bands * f.channels;
  const uint32_t parts = send_pool_ ? std::min(send_pool_->threads(), lanes) : 1;
  auto send_part = [&](uint32_t part) {
    const WorkerPool::Range r = WorkerPool::range(lanes, parts, part);
    for (uint32_t lane = r.first; lane < r.end; ++lane)
      send_lane(out, lane / f.channels, lane % f.channels, slot.data[o].data() + size_t(lane) * slot.stride, n,
                t_first_ps, first_flags, clipped, rate_hz, part);
    if (flush_now || parts > 1) flush(out, part);
  };
  if (parts > 1)
    send_pool_->run(parts, send_part);
  else
    send_part(0);
}

bool OutputWorker::sends_together() const noexcept {
  return data_.size() == 1 && data_[0].stream >= 0 && !send_pool_;
}

void OutputWorker::send_slots(OutputSlot* first) noexcept {
  std::array<OutputSlot*, kMaxTogether> slots{};
  std::array<int64_t, kMaxTogether> started{};
  const bool together = sends_together();
  size_t n = 0;
  for (OutputSlot* slot = first; slot;) {
    slots[n] = slot;
    started[n] = mono_now_ns();
    send_slot(*slot, !together);
    ++n;
    if (!together || n == kMaxTogether || !full_slots_.pop(slot)) slot = nullptr;
  }
  if (together) flush(data_[0]);  // what the chunks left in the batch, in one call
  const int64_t done = mono_now_ns();
  for (size_t i = 0; i < n; ++i) {
    account_sent(*slots[i], started[i], done);
    free_slots_.push(slots[i]);  // cannot fail: the free queue holds every slot
  }
  if (n > 1) counters_.chunks_sent_together.fetch_add(n - 1, std::memory_order_relaxed);
}

void OutputWorker::send_slot(const OutputSlot& slot, bool flush_now) noexcept {
  const ChunkHeader& h = slot.header;
  last_utc_ns_ = h.t_first_utc_ns;
  const int64_t now = mono_now_ns();
  for (size_t o = 0; o < data_.size(); ++o) {
    DataOutput& out = data_[o];
    if (now >= out.next_context_mono_ns) {
      flush(out);  // the data of chunks before it (send_slots) go first, as they were captured first
      send_context(out, out.next_context_mono_ns == 0);
      out.next_context_mono_ns = now + int64_t(out.settings.context_interval_s * 1e9);
    }
    if (out.stream < 0) continue;  // hit waveforms: send_waveforms()
    const StreamFormat& f = *out.format;
    // Stamp each sample with the time of the input frame it belongs to.
    const __int128 delay_ps = frames_to_ps(f.delay_frames, options_.rate_hz);
    // A loss, or a step of the time line, goes on each lane's first packet.
    const uint32_t first_flags = h.flags & (chunk_flags::kOverrunBefore | chunk_flags::kClockStepped);
    const bool clipped = (h.flags & chunk_flags::kClipped) != 0;
    const __int128 t_first_ps = __int128(h.t_first_utc_ns) * 1000 - delay_ps;
    const uint32_t dec = out.settings.decimation;
    if (dec == 1) {
      send_lanes(out, slot, o, slot.frames, t_first_ps, first_flags, clipped, options_.rate_hz, flush_now);
      continue;
    }
    // The pipeline put only the kept samples in the slot (kept_samples(): every Nth of the stream).
    const KeptSamples kept = kept_samples(h.first_frame, slot.frames, dec);
    out.flags_pending |= first_flags;
    if (kept.count == 0) continue;
    const __int128 t_kept_ps = t_first_ps + frames_to_ps(kept.first, options_.rate_hz);
    send_lanes(out, slot, o, kept.count, t_kept_ps, out.flags_pending, clipped, options_.rate_hz / dec, flush_now);
    out.flags_pending = 0;
  }
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

bool OutputWorker::send_waveforms(DataOutput& out) noexcept {
  bool did = false;
  while (Waveform* w = out.waveforms->next()) {
    // Each waveform's first packet is stamped with the time of its first (pretrigger) sample.
    send_lane(out, w->band, w->channel, w->data.data(), w->samples, __int128(w->t_first_utc_ns) * 1000, 0, false,
              options_.rate_hz);
    out.waveforms->release(w);
    did = true;
  }
  flush(out);
  return did;
}

void OutputWorker::send_event(const std::string& type, nlohmann::json body, int64_t utc_ns) noexcept {
  if (event_outputs_.empty()) return;
  try {
    send_event_text(encoder_.encode(type, std::move(body), utc_ns));
  } catch (...) {  // out of memory while formatting: the event is lost, and counted
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void OutputWorker::send_event_text(std::string_view text) noexcept {
  if (event_outputs_.empty()) return;
  if (batching_events_ && text.size() <= event_batch_.max_bytes()) {
    if (event_batch_.full()) flush_events();
    std::memcpy(event_batch_.next(), text.data(), text.size());
    event_batch_.commit(text.size());
    return;
  }
  flush_events();  // what was queued goes first
  for (EventOutput& e : event_outputs_) {
    if (e.sender->send(text.data(), text.size())) {
      counters_.events_sent.fetch_add(1, std::memory_order_relaxed);
      counters_.bytes_sent.fetch_add(text.size(), std::memory_order_relaxed);
    } else {
      counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void OutputWorker::flush_events() noexcept {
  const size_t n = event_batch_.size();
  if (n == 0) return;
  const int64_t t0 = mono_now_ns();
  for (EventOutput& e : event_outputs_) {
    if (e.lines) pack_lines(e);
    DatagramBatch& batch = e.lines ? *e.lines : event_batch_;
    const UdpSender::BatchResult r = e.sender->send_batch(batch);
    counters_.events_sent.fetch_add(r.items, std::memory_order_relaxed);
    counters_.bytes_sent.fetch_add(r.bytes, std::memory_order_relaxed);
    if (r.sent < batch.size()) counters_.send_errors.fetch_add(batch.size() - r.sent, std::memory_order_relaxed);
  }
  event_batch_.clear();
  pass_send_ns_ += mono_now_ns() - t0;
}

void OutputWorker::pack_lines(EventOutput& out) noexcept {
  DatagramBatch& packed = *out.lines;
  const size_t limit = vita49::max_datagram(out.settings.jumbo, out.sender->ipv6());
  packed.clear();
  size_t used = 0;
  uint32_t items = 0;
  uint8_t* at = nullptr;
  // As many whole events as fit the limit (an event longer than it goes alone, as unframed);
  // never more datagrams than events, so the batch (as large as the queue) never fills.
  for (size_t i = 0; i < event_batch_.size(); ++i) {
    const size_t len = event_batch_.bytes(i);
    if (items && used + 1 + len > limit) {
      packed.commit(used, items);
      used = 0;
      items = 0;
    }
    if (items == 0) at = packed.next();
    else at[used++] = '\n';
    std::memcpy(at + used, event_batch_.iov(i)->iov_base, len);
    used += len;
    ++items;
  }
  if (items) packed.commit(used, items);
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
    if (!event_outputs_.empty()) send_event_text(stage_event_text(ev, event_text_, event_json_, encoder_.reserve(1)));
    count_event(ev);
  } catch (...) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string_view OutputWorker::stage_event_text(const EventRecord& ev, EventText& text, std::string& json,
                                                uint64_t seq) const {
  const char* type = "alarm";
  switch (ev.kind) {
    case EventKind::kAlarmRaised:
    case EventKind::kAlarmCleared: break;  // the stage adds state, rule and level
    case EventKind::kAeHit: type = "ae_hit"; break;
    case EventKind::kAeLevel: type = "ae_level"; break;
    case EventKind::kVibration: type = "vibration"; break;
    case EventKind::kOverload:
    case EventKind::kSourceOverrun:
    case EventKind::kBackendFallback:
    case EventKind::kClockStep: break;  // the pipeline's own: send_event_record
  }
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

void OutputWorker::count_event(const EventRecord& ev) noexcept {
  const size_t by = ev.kind == EventKind::kAeHit ? 1 : ev.kind == EventKind::kAeLevel ? 2 : ev.kind == EventKind::kVibration ? 3 : 0;
  events_by_type_[by].fetch_add(1, std::memory_order_relaxed);
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
    uint32_t start = 0;
    for (const uint32_t end : f.ends) {
      if (end > start) send_event_text(std::string_view(f.bytes.data() + start, end - start));
      start = end;
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
      if (send_pool_ && !event_outputs_.empty() && j - i >= kEventsPerPart * 2) {
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
  // An output's counters: its sender's, and its send helpers' (Options::send_threads) with them.
  auto describe = [&](const char* kind, const std::string& stream, const UdpSender& s,
                      const std::vector<std::unique_ptr<UdpSender>>& helpers) {
    uint64_t datagrams = 0, out_refused = 0, out_full = 0, other = 0;
    auto add = [&](const UdpSender& u) {
      const SendCounters& c = u.counters();
      datagrams += c.datagrams.load(std::memory_order_relaxed);
      out_refused += c.refused.load(std::memory_order_relaxed);
      out_full += c.buffer_full.load(std::memory_order_relaxed);
      other += c.other.load(std::memory_order_relaxed);
    };
    add(s);
    for (const auto& h : helpers) add(*h);
    refused += out_refused;
    buffer_full += out_full;
    nlohmann::json o{{"kind", kind},
                     {"destination", s.destination()},
                     {"datagrams", datagrams},
                     {"refused", out_refused},
                     {"buffer_full", out_full},
                     {"other_errors", other}};
    if (!stream.empty()) o["stream"] = stream;
    outputs.push_back(std::move(o));
  };
  const std::vector<std::unique_ptr<UdpSender>> none;
  for (const DataOutput& d : data_) describe("vita49", d.settings.stream, *d.sender, d.helpers);
  for (const EventOutput& e : event_outputs_) describe("events", "", *e.sender, none);
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
                         {"vibration", events_by_type_[3].load(std::memory_order_relaxed)}};
  return j;
}

void OutputWorker::watch_receiver(const UdpSender& sender, ReceiverWatch& w, int64_t now) noexcept {
  const SendCounters& c = sender.counters();
  const uint64_t refused = c.refused.load(std::memory_order_relaxed);
  const uint64_t datagrams = c.datagrams.load(std::memory_order_relaxed);
  if (refused != w.refused_seen) {
    w.refused_seen = refused;
    w.last_refusal_ns = now;
    w.datagrams_at_refusal = datagrams;
    if (!w.absent) {
      w.absent = true;
      log_.printf(4, "output %s: no receiver there (port unreachable); sending goes on, failures are counted",
                  sender.destination().c_str());
    }
  } else if (w.absent && now - w.last_refusal_ns > 3'000'000'000 && datagrams - w.datagrams_at_refusal >= 10) {
    // Refusals come every other datagram on loopback and about once a second where the peer
    // rate-limits ICMP: 3 s and 10 datagrams without one means someone is listening again.
    w.absent = false;
    log_.printf(5, "output %s: the receiver is back", sender.destination().c_str());
  }
}

void OutputWorker::housekeeping(bool final_report) noexcept {
  const int64_t now = mono_now_ns();
  for (DataOutput& d : data_) watch_receiver(*d.sender, d.watch, now);
  for (EventOutput& e : event_outputs_) watch_receiver(*e.sender, e.watch, now);
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
  for (EventOutput& e : event_outputs_) {
    if (!final_report && now < e.next_status_mono_ns) continue;
    e.next_status_mono_ns = now + int64_t(e.settings.status_interval_s * 1e9);
    try {
      const std::string text = encoder_.encode("status", status_json(final_report), utc_now_ns());
      if (e.sender->send(text.data(), text.size()))
        counters_.events_sent.fetch_add(1, std::memory_order_relaxed);
      else
        counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void OutputWorker::run() noexcept {
  const int64_t t_run = mono_now_ns();
  for (EventOutput& e : event_outputs_) e.next_status_mono_ns = t_run + int64_t(e.settings.status_interval_s * 1e9);
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
    flush_events();  // before the chunk's data: the events go out as soon as before
    batching_events_ = false;
    if (any) {
      counters_.event_passes.record_ns(mono_now_ns() - t_events);
      counters_.event_sends.record_ns(pass_send_ns_);
      did = true;
    }
    for (DataOutput& out : data_)
      if (out.waveforms && send_waveforms(out)) did = true;
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
