// Sink: one output of vigild, driven by the output thread (pipeline/output_worker). The output
// thread takes the processed chunks and the stages' events, writes each event as text once, and
// hands both to every sink; a sink turns them into bytes on its wire and sends them, counting
// what it sends and what fails. A new kind of output is one Sink (docs/ARCHITECTURE.md).
// Every method is called on the output thread only, except describe() (any thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil {

class DatagramBatch;
class RtLog;
struct OutputSlot;

// What the sinks send and fail to send, summed over every sink (the status' packets_sent,
// bytes_sent, send_errors, events_sent). Each counter is written by the output thread and its
// send pool; readers use relaxed loads.
struct SinkCounters {
  std::atomic<uint64_t> packets_sent{0};
  std::atomic<uint64_t> context_packets_sent{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> send_errors{0};  // includes a full socket buffer (EAGAIN)
  std::atomic<uint64_t> events_sent{0};
};

// Stage events queued in one pass of the output thread, in their order: each event's text (a
// JSON object, one datagram of `texts` each) and its type ("ae_hit", "alarm", ...).
struct EventBatch {
  DatagramBatch& texts;
  const std::vector<std::string_view>& types;
};

// An output's totals by cause, for the status' `outputs` list.
struct SinkStatus {
  const char* kind = "";
  std::string destination, stream;  // stream: data sinks only
  uint64_t datagrams = 0, refused = 0, buffer_full = 0, other_errors = 0;
  // What this kind of output counts besides (a fleet output's acknowledgements, ...) and its
  // facts (connection state, last error), in the status' outputs entry.
  std::vector<std::pair<const char*, uint64_t>> counts;
  std::vector<std::pair<const char*, std::string>> facts;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // A processed chunk (the slot holds every data output's lanes). flush_now false: the datagrams
  // may stay batched until flush(), so that several chunks go to the kernel in one call.
  virtual void send_chunk(const OutputSlot& /*slot*/, bool /*flush_now*/) noexcept {}
  virtual void flush() noexcept {}
  // Work of the sink's own between chunks (hit waveforms waiting); whether it did any.
  virtual bool poll() noexcept { return false; }
  // One event, of the given type, as its JSON text.
  virtual void send_event(std::string_view /*type*/, std::string_view /*text*/) noexcept {}
  // A pass's stage events, in order.
  virtual void send_events(const EventBatch& /*batch*/) noexcept {}
  // Whether a status event is due at `now` (monotonic ns): the output thread then writes one and
  // hands it to send_event(). The final report goes to every sink that takes events.
  virtual bool status_due(int64_t /*now_mono_ns*/, bool /*final_report*/) noexcept { return false; }
  // Output thread, at the end of a run just before the final report: a bounded wait for what the
  // sink queued to leave, so that the report counts it as delivered, not as pending.
  virtual void settle() noexcept {}
  // Once a pass: watch the receiver, log what changed.
  virtual void housekeeping(int64_t /*now_mono_ns*/) noexcept {}
  // Any thread: the output's totals (atomics only; may throw: allocation).
  virtual SinkStatus describe() const = 0;
  // A sink with a thread of its own logs there; vigild drains it into the journal.
  virtual RtLog* own_log() noexcept { return nullptr; }
  // Whether this sink alone may batch the datagrams of several chunks (send_chunk's flush_now).
  virtual bool batches_chunks() const noexcept { return false; }
};

}  // namespace vigil
