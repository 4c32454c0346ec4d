// RT-adjacent: output thread. The lines batch is allocated here, at start.
#include "sinks/event_udp_sink.hpp"

#include <algorithm>
#include <cstring>

#include "core/rt_log.hpp"
#include "wire/vita49.hpp"

namespace vigil {

EventUdpSink::EventUdpSink(boost::asio::io_context& io, const EventOutputSettings& settings, size_t queue_bytes,
                           SinkCounters& counters, RtLog& log)
    : settings_(settings), counters_(counters), log_(log),
      sender_(std::make_unique<UdpSender>(io, settings.destination, settings.multicast)) {
  if (settings_.framing == "lines")
    lines_ = std::make_unique<DatagramBatch>(
        UdpSender::kMaxBatch, std::max(queue_bytes, settings_.jumbo ? vita49::kMaxJumboDatagram : vita49::kMaxDatagram));
}

EventUdpSink::~EventUdpSink() = default;

void EventUdpSink::send_event(std::string_view /*type*/, std::string_view text) noexcept {
  if (sender_->send(text.data(), text.size())) {
    counters_.events_sent.fetch_add(1, std::memory_order_relaxed);
    counters_.bytes_sent.fetch_add(text.size(), std::memory_order_relaxed);
  } else {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void EventUdpSink::send_events(const EventBatch& batch) noexcept {
  if (lines_) pack_lines(batch.texts);
  DatagramBatch& datagrams = lines_ ? *lines_ : batch.texts;
  const UdpSender::BatchResult r = sender_->send_batch(datagrams);
  counters_.events_sent.fetch_add(r.items, std::memory_order_relaxed);
  counters_.bytes_sent.fetch_add(r.bytes, std::memory_order_relaxed);
  if (r.sent < datagrams.size()) counters_.send_errors.fetch_add(datagrams.size() - r.sent, std::memory_order_relaxed);
}

void EventUdpSink::pack_lines(DatagramBatch& texts) noexcept {
  DatagramBatch& packed = *lines_;
  const size_t limit = vita49::max_datagram(settings_.jumbo, sender_->ipv6());
  packed.clear();
  size_t used = 0;
  uint32_t items = 0;
  uint8_t* at = nullptr;
  // As many whole events as fit the limit (an event longer than it goes alone, as unframed);
  // never more datagrams than events, so the batch (as large as the queue) never fills.
  for (size_t i = 0; i < texts.size(); ++i) {
    const size_t len = texts.bytes(i);
    if (items && used + 1 + len > limit) {
      packed.commit(used, items);
      used = 0;
      items = 0;
    }
    if (items == 0) at = packed.next();
    else at[used++] = '\n';
    std::memcpy(at + used, texts.iov(i)->iov_base, len);
    used += len;
    ++items;
  }
  if (items) packed.commit(used, items);
}

bool EventUdpSink::status_due(int64_t now, bool final_report) noexcept {
  const int64_t interval = int64_t(settings_.status_interval_s * 1e9);
  if (next_status_mono_ns_ < 0) next_status_mono_ns_ = now + interval;
  if (!final_report && now < next_status_mono_ns_) return false;
  next_status_mono_ns_ = now + interval;
  return true;
}

SinkStatus EventUdpSink::describe() const {
  const SendCounters& c = sender_->counters();
  SinkStatus s;
  s.kind = "events";
  s.destination = sender_->destination();
  s.datagrams = c.datagrams.load(std::memory_order_relaxed);
  s.refused = c.refused.load(std::memory_order_relaxed);
  s.buffer_full = c.buffer_full.load(std::memory_order_relaxed);
  s.other_errors = c.other.load(std::memory_order_relaxed);
  return s;
}

}  // namespace vigil
