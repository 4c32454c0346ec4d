// RT-adjacent: output thread (and its send pool). Packets are built in preallocated batches.
#include "sinks/vita49_udp_sink.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "core/rt_log.hpp"
#include "core/waveform_channel.hpp"
#include "core/worker_pool.hpp"
#include "sinks/output_slot.hpp"
#include "wire/stream_id.hpp"
#include "wire/vita49.hpp"

namespace vigil {

Vita49UdpSink::Vita49UdpSink(boost::asio::io_context& io, Params params, WorkerPool* send_pool,
                             SinkCounters& counters, RtLog& log)
    : params_(std::move(params)), send_pool_(send_pool), counters_(counters), log_(log) {
  const DataOutputSettings& s = params_.settings;
  sender_ = std::make_unique<UdpSender>(io, s.destination, s.multicast);
  const uint32_t parts = params_.waveforms || !send_pool_ ? 1 : send_pool_->threads();
  for (uint32_t p = 1; p < parts; ++p) helpers_.push_back(std::make_unique<UdpSender>(io, s.destination, s.multicast));
  for (uint32_t p = 0; p < parts; ++p)
    batches_.push_back(std::make_unique<DatagramBatch>(UdpSender::kMaxBatch, vita49::kMaxJumboDatagram));
  frames_.resize(parts);
  frame_counts_.assign(parts, 0);
  vrl_ = s.framing == "vrl";
  datagram_bytes_ = vita49::max_datagram(s.jumbo, sender_->ipv6());
  const StreamFormat& f = *params_.format;
  packet_counts_.assign(size_t(f.bands) * f.channels, 0);
  context_counts_.assign(size_t(f.bands) * f.channels, 0);
  packet_.resize(vita49::kMaxJumboDatagram);
}

Vita49UdpSink::~Vita49UdpSink() = default;

void Vita49UdpSink::send_context(bool changed) noexcept {
  const StreamFormat& f = *params_.format;
  vita49::ContextPacket p;
  vita49::split_ps(__int128(last_utc_ns_) * 1000, p.ts_int, p.ts_frac_ps);
  p.changed = changed;
  p.sample_rate_hz = f.rate_hz / params_.settings.decimation;
  for (uint32_t b = 0; b < f.bands; ++b) {
    for (uint32_t c = 0; c < f.channels; ++c) {
      const size_t lane = size_t(b) * f.channels + c;
      p.stream_id = stream_id(params_.output_index, b, c);
      p.packet_count = context_counts_[lane];
      context_counts_[lane] = uint8_t((context_counts_[lane] + 1) & 0xF);
      if (vrl_) {  // into frames with the others, sent together below
        size_t room = 0;
        uint8_t* at = frame_room(0, vita49::kContextBytes, room);
        frames_[0].add(vita49::encode_context(p, at, room));
        continue;
      }
      const size_t n = vita49::encode_context(p, packet_.data(), packet_.size());
      if (sender_->send(packet_.data(), n)) {
        counters_.context_packets_sent.fetch_add(1, std::memory_order_relaxed);
        counters_.bytes_sent.fetch_add(n, std::memory_order_relaxed);
      } else {
        counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  if (vrl_) flush(0, true);
}

uint8_t* Vita49UdpSink::frame_room(uint32_t part, size_t bytes, size_t& room) noexcept {
  vrl::FrameWriter& fw = frames_[part];
  if (fw.is_open() && fw.room() < bytes) {
    end_frame(part);
    if (batch_of(part).full()) flush(part);
  }
  if (!fw.is_open()) fw.open(batch_of(part).next(), datagram_bytes_);
  room = fw.room();
  return fw.cursor();
}

void Vita49UdpSink::end_frame(uint32_t part) noexcept {
  vrl::FrameWriter& fw = frames_[part];
  if (!fw.is_open()) return;
  const uint32_t packets = fw.packets();
  batch_of(part).commit(fw.close(frame_counts_[part]), packets);
  frame_counts_[part] = uint16_t((frame_counts_[part] + 1) & 0xFFF);
}

void Vita49UdpSink::send_lane(uint32_t band, uint32_t channel, const float* samples, size_t n_total,
                              __int128 t_first_ps, uint32_t first_flags, bool over_range, double rate_hz,
                              uint32_t part) noexcept {
  DatagramBatch& batch = batch_of(part);
  // In a VRL frame, a packet has the datagram's room less the frame's header and trailer.
  const size_t per_packet = vita49::max_samples_per_packet(datagram_bytes_ - (vrl_ ? vrl::kOverheadBytes : 0));
  const size_t lane = size_t(band) * params_.format->channels + channel;
  vita49::DataPacket p;
  p.stream_id = stream_id(params_.output_index, band, channel);
  p.over_range = over_range;
  for (size_t k = 0; k < n_total; k += per_packet) {
    const size_t n = std::min(per_packet, n_total - k);
    // Timestamp of the packet's first sample: exact picoseconds for integer rates.
    vita49::split_ps(t_first_ps + frames_to_ps(k, rate_hz), p.ts_int, p.ts_frac_ps);
    p.sample_loss = k == 0 && (first_flags & chunk_flags::kOverrunBefore);
    p.time_step = k == 0 && (first_flags & chunk_flags::kClockStepped);
    p.packet_count = packet_counts_[lane];
    packet_counts_[lane] = uint8_t((packet_counts_[lane] + 1) & 0xF);
    if (vrl_) {
      size_t room = 0;
      uint8_t* at = frame_room(part, vita49::kDataOverheadBytes + 4 * n, room);
      frames_[part].add(vita49::encode_data(p, samples + k, n, at, room));
      continue;
    }
    batch.commit(vita49::encode_data(p, samples + k, n, batch.next(), batch.max_bytes()));
    if (batch.full()) flush(part);
  }
}

void Vita49UdpSink::flush(uint32_t part, bool context) noexcept {
  end_frame(part);
  DatagramBatch& batch = batch_of(part);
  if (batch.size() == 0) return;
  const UdpSender::BatchResult r = sender_of(part).send_batch(batch);
  (context ? counters_.context_packets_sent : counters_.packets_sent).fetch_add(r.items, std::memory_order_relaxed);
  counters_.bytes_sent.fetch_add(r.bytes, std::memory_order_relaxed);
  counters_.send_errors.fetch_add(batch.size() - r.sent, std::memory_order_relaxed);
  batch.clear();
}

void Vita49UdpSink::send_lanes(const OutputSlot& slot, size_t n, __int128 t_first_ps, uint32_t first_flags,
                               bool clipped, double rate_hz, bool flush_now) noexcept {
  const StreamFormat& f = *params_.format;
  const uint32_t lanes = f.bands * f.channels;
  const uint32_t parts = std::min(uint32_t(batches_.size()), lanes);
  const std::vector<float>& data = slot.data[params_.output_index];
  auto send_part = [&](uint32_t part) {
    const WorkerPool::Range r = WorkerPool::range(lanes, parts, part);
    for (uint32_t lane = r.first; lane < r.end; ++lane)
      send_lane(lane / f.channels, lane % f.channels, data.data() + size_t(lane) * slot.stride, n, t_first_ps,
                first_flags, clipped, rate_hz, part);
    if (flush_now || parts > 1) flush(part);
  };
  if (parts > 1)
    send_pool_->run(parts, send_part);
  else
    send_part(0);
}

// A source stamps each chunk with its time line's nanosecond, rounded down; between chunks the
// packets must be spaced by the exact frame count (at 48 kHz, 500 frames are 10 416 666.67 ns). A
// chunk whose time lies within 1 ns of the line through the anchor chunk is placed on that line;
// any other (a step, a restart, the first) anchors it anew.
__int128 Vita49UdpSink::chunk_time_ps(const ChunkHeader& h) noexcept {
  const __int128 stamped = __int128(h.t_first_utc_ns) * 1000;
  if (anchored_ && h.first_frame >= anchor_frame_) {
    const __int128 on_line = anchor_ps_ + frames_to_ps(h.first_frame - anchor_frame_, params_.input_rate_hz);
    if (on_line - stamped < 1000 && stamped - on_line < 1000) return on_line;
  }
  anchored_ = true;
  anchor_frame_ = h.first_frame;
  anchor_ps_ = stamped;
  return stamped;
}

void Vita49UdpSink::send_chunk(const OutputSlot& slot, bool flush_now) noexcept {
  const ChunkHeader& h = slot.header;
  last_utc_ns_ = h.t_first_utc_ns;
  const int64_t now = mono_now_ns();
  if (now >= next_context_mono_ns_) {
    flush(0);  // the data of chunks before it (batched) go first, as they were captured first
    send_context(next_context_mono_ns_ == 0);
    next_context_mono_ns_ = now + int64_t(params_.settings.context_interval_s * 1e9);
  }
  if (params_.waveforms) return;  // hit waveforms: poll()
  const StreamFormat& f = *params_.format;
  const double rate_hz = params_.input_rate_hz;
  // Stamp each sample with the time of the input frame it belongs to.
  const __int128 delay_ps = frames_to_ps(f.delay_frames, rate_hz);
  // A loss, or a step of the time line, goes on each lane's first packet.
  const uint32_t first_flags = h.flags & (chunk_flags::kOverrunBefore | chunk_flags::kClockStepped);
  const bool clipped = (h.flags & chunk_flags::kClipped) != 0;
  const __int128 t_first_ps = chunk_time_ps(h) - delay_ps;
  const uint32_t dec = params_.settings.decimation;
  if (dec == 1) {
    send_lanes(slot, slot.frames, t_first_ps, first_flags, clipped, rate_hz, flush_now);
    return;
  }
  // The pipeline put only the kept samples in the slot (kept_samples(): every Nth of the stream).
  const KeptSamples kept = kept_samples(h.first_frame, slot.frames, dec);
  flags_pending_ |= first_flags;
  if (kept.count == 0) return;
  const __int128 t_kept_ps = t_first_ps + frames_to_ps(kept.first, rate_hz);
  send_lanes(slot, kept.count, t_kept_ps, flags_pending_, clipped, rate_hz / dec, flush_now);
  flags_pending_ = 0;
}

bool Vita49UdpSink::poll() noexcept {
  if (!params_.waveforms) return false;
  bool did = false;
  while (Waveform* w = params_.waveforms->next()) {
    // Each waveform's first packet is stamped with the time of its first (pretrigger) sample.
    send_lane(w->band, w->channel, w->data.data(), w->samples, __int128(w->t_first_utc_ns) * 1000, 0, false,
              params_.input_rate_hz);
    params_.waveforms->release(w);
    did = true;
  }
  flush(0);
  return did;
}

SinkStatus Vita49UdpSink::describe() const {
  SinkStatus s;
  s.kind = "vita49";
  s.destination = sender_->destination();
  s.stream = params_.settings.stream;
  auto add = [&](const UdpSender& u) {
    const SendCounters& c = u.counters();
    s.datagrams += c.datagrams.load(std::memory_order_relaxed);
    s.refused += c.refused.load(std::memory_order_relaxed);
    s.buffer_full += c.buffer_full.load(std::memory_order_relaxed);
    s.other_errors += c.other.load(std::memory_order_relaxed);
  };
  add(*sender_);
  for (const auto& h : helpers_) add(*h);
  return s;
}

}  // namespace vigil
