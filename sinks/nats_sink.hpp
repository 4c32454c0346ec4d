// NatsSink: a fleet output (kind: nats). Publishes each selected event, the same JSON text the
// UDP event output sends, to a NATS JetStream stream as subject <prefix>.<type>, with the header
// Nats-Msg-Id <rig>-<run>-<seq> so the stream drops the duplicates of a resend (docs/FLEET.md).
// The rig's start event and its latest status go to a key-value bucket (vigil_rigs) too.
//
// Threads: the output thread only copies an event into a bounded queue (never waits for the
// network); the sink's own thread (vigil-nats) connects, creates the stream and bucket, publishes
// asynchronously with an acknowledgement timeout and resends unchanged what was not acknowledged;
// the client library's thread delivers the acknowledgements. When the queue is full the oldest
// unsent event goes, counted. The broker may be absent at start: the sink keeps trying.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/settings.hpp"
#include "sinks/sink.hpp"

namespace vigil {

class RtLog;

// The settings' defaults filled in: the rig from the host name, the subject prefix from the rig.
FleetOutputSettings resolve_fleet_output(FleetOutputSettings s);

class NatsSink final : public Sink {
 public:
  // run_id: this life of the output (a reload that rebuilds the outputs starts another); the
  // message seqs count from 0 within it. Starts the sink's thread; never fails for the broker.
  NatsSink(const FleetOutputSettings& settings, std::string run_id, SinkCounters& counters);
  // Gives the queue up to drain_s to be published and acknowledged, then stops (what is left is
  // logged and counted as pending).
  ~NatsSink() override;

  void send_event(std::string_view type, std::string_view text) noexcept override;
  void send_events(const EventBatch& batch) noexcept override;
  bool status_due(int64_t now_mono_ns, bool final_report) noexcept override;
  // Connected: up to 1 s for the queue to be acknowledged (the publisher thread does the work).
  void settle() noexcept override;
  SinkStatus describe() const override;
  RtLog* own_log() noexcept override;

  // Waits (the output thread only at the end of a run) until everything queued so far is acknowledged or
  // timeout_s passed; whether it was. For tests and the drain at stop.
  bool wait_acknowledged(double timeout_s) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil
