// FleetOrder: the events of many rigs, read from a fleet stream (docs/FLEET.md), put back in each
// rig's order. A rig's messages carry (rig, run, seq): seq counts from 0 in each run (one life of
// its fleet output). A resend may arrive after newer messages, or twice (the stream drops
// duplicates only within its window): FleetOrder emits each (rig, run, seq) once, in seq order,
// holding a message that comes early for up to hold_s for the ones before it; those that have not
// come by then are a gap (counted, never waited for again).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace vigil {

struct FleetRigStats {
  uint64_t events = 0;      // emitted
  uint64_t duplicates = 0;  // dropped: that seq was emitted or is held already
  uint64_t gaps = 0;        // runs of seqs that never came
  uint64_t missing = 0;     // seqs in those gaps
  uint64_t runs = 0;        // runs seen (a restart of the rig's vigild, a reload)
  uint64_t held = 0;        // waiting now for an earlier seq
  int64_t last_seen_ns = 0; // when its last message came (the caller's clock)
};

class FleetOrder {
 public:
  using Emit = std::function<void(const std::string& rig, const std::string& run, uint64_t seq, std::string_view text)>;

  explicit FleetOrder(double hold_s = 5, size_t max_held = 100000) : hold_ns_(int64_t(hold_s * 1e9)), max_held_(max_held) {}

  // One message; emits it and any held ones it frees, in order.
  void take(const std::string& rig, const std::string& run, uint64_t seq, std::string_view text, int64_t now_ns,
            const Emit& emit);
  // Gives up on what was not there within hold_s (or everything, at the end): emits what is held.
  void expire(int64_t now_ns, const Emit& emit);
  void flush(const Emit& emit) { expire(INT64_MAX, emit); }

  const std::map<std::string, FleetRigStats>& rigs() const noexcept { return stats_; }

 private:
  struct Run {
    bool started = false;
    uint64_t next = 0;  // the seq to emit next
    std::map<uint64_t, std::pair<int64_t, std::string>> held;  // seq -> (arrived, text)
  };
  void drain(const std::string& rig, const std::string& run, Run& r, FleetRigStats& st, const Emit& emit);

  int64_t hold_ns_;
  size_t max_held_;
  std::map<std::pair<std::string, std::string>, Run> runs_;
  std::map<std::string, FleetRigStats> stats_;
};

// A fleet message's three headers read: false (and why) when any is absent or malformed.
bool parse_fleet_headers(std::string_view rig, std::string_view run, std::string_view seq, uint64_t& seq_out,
                         std::string& why);

}  // namespace vigil
