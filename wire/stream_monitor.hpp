// StreamMonitor: what a receiver learns from VITA 49 packets and JSON events: per-stream packet
// and sample counts, gaps (4-bit packet counter), timestamp order, sample-loss flags, and event
// sequence gaps. Used by vigil-listen and by the integration tests. Thread: the caller's.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "wire/vita49.hpp"

namespace vigil {

struct StreamStats {
  uint32_t stream_id = 0;
  uint64_t packets = 0;
  uint64_t samples = 0;
  uint64_t gaps = 0;               // packets missing by the 4-bit counter
  uint64_t timestamp_errors = 0;   // a packet not later than the previous one
  uint64_t sample_loss_flags = 0;  // packets whose trailer says samples were lost before them
  // By timestamps, once a context packet gave the rate: samples missing between consecutive
  // packets, and the places (meaningful for continuous streams, not for hit waveforms).
  uint64_t samples_missing = 0;
  uint64_t holes = 0;
  // The other way: a packet that starts before the previous one ended (a stream restarted with a
  // longer filter delay, or replayed), and the samples so repeated on the time line.
  uint64_t samples_overlapping = 0;
  uint64_t overlaps = 0;
  // Places where the time line breaks (a hole, an overlap, or a timestamp not later than the one
  // before): a recording of the stream starts a new segment at each (vigil-listen --record).
  uint64_t breaks = 0;
  // Packets whose trailer says the sender's time line starts anew there (vita49::kTrailerTimeStep:
  // its wall clock stepped): a break, but no hole or overlap, since no sample was lost or repeated.
  uint64_t time_steps = 0;
  uint64_t context_packets = 0;
  double rate_hz = 0;              // from context packets (0 until one arrives)
  bool have_first = false;
  uint32_t first_ts_int = 0;
  uint64_t first_ts_frac_ps = 0;
  uint8_t last_count = 0;
  __int128 last_ts_ps = 0;
  size_t last_samples = 0;
};

class StreamMonitor {
 public:
  // Accounts one decoded packet (data or context).
  void on_packet(const vita49::Decoded& p);
  // Accounts one event's seq from `sender` (e.g. "127.0.0.1:40000"); returns the seqs missed.
  uint64_t on_event_seq(const std::string& sender, uint64_t seq);

  const std::map<uint32_t, StreamStats>& streams() const noexcept { return streams_; }
  uint64_t events() const noexcept { return events_; }
  uint64_t event_gaps() const noexcept { return event_gaps_; }
  uint64_t malformed = 0;  // datagrams that did not decode (counted by the caller)

 private:
  std::map<uint32_t, StreamStats> streams_;
  std::map<std::string, uint64_t> next_seq_;
  uint64_t events_ = 0;
  uint64_t event_gaps_ = 0;
};

}  // namespace vigil
