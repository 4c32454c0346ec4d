// EventUdpSink: an event output. Sends each event (alarms, AE hits, status, ...) as its JSON text
// over UDP: one a datagram, or with framing "lines" a pass's events several to a datagram, one a
// line (docs/PROTOCOL.md). A status event every status_interval_s. Sending never waits: failures
// are counted by cause.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "config/settings.hpp"
#include "sinks/receiver_watch.hpp"
#include "sinks/sink.hpp"
#include "wire/udp_sender.hpp"

namespace vigil {

class RtLog;

class EventUdpSink final : public Sink {
 public:
  // Opens and resolves the socket now (throws std::runtime_error naming the destination).
  // queue_bytes: the largest event text the output thread queues for send_events().
  EventUdpSink(boost::asio::io_context& io, const EventOutputSettings& settings, size_t queue_bytes,
               SinkCounters& counters, RtLog& log);
  ~EventUdpSink() override;

  void send_event(std::string_view type, std::string_view text) noexcept override;
  void send_events(const EventBatch& batch) noexcept override;
  bool status_due(int64_t now_mono_ns, bool final_report) noexcept override;
  void housekeeping(int64_t now_mono_ns) noexcept override { watch_.look(*sender_, now_mono_ns, log_); }
  SinkStatus describe() const override;

 private:
  // framing: lines: packs the queued texts into lines_'s datagrams, in order.
  void pack_lines(DatagramBatch& texts) noexcept;

  EventOutputSettings settings_;
  SinkCounters& counters_;
  RtLog& log_;
  std::unique_ptr<UdpSender> sender_;
  std::unique_ptr<DatagramBatch> lines_;  // framing: lines
  int64_t next_status_mono_ns_ = -1;      // -1: the first look starts the interval
  ReceiverWatch watch_;
};

}  // namespace vigil
