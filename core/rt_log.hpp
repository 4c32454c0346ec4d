// RtLog: log lines from a real-time thread without blocking it: formatted into a fixed record
// (snprintf into a stack-free, preallocated slot, no allocation) and pushed to an SPSC queue that
// vigild's main thread drains into the journal. A full queue drops the line and counts it.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "core/spsc_queue.hpp"

namespace vigil {

struct RtLogRecord {
  uint8_t level = 6;    // syslog priority: 3 error, 4 warning, 5 notice, 6 info
  char text[200] = {};
};

class RtLog {
 public:
  explicit RtLog(size_t capacity = 256) : queue_(capacity) {}

  // Producer thread only.
  template <typename... Args>
  void printf(uint8_t level, const char* format, Args... args) noexcept {
    RtLogRecord r;
    r.level = level;
    if constexpr (sizeof...(Args) == 0)
      std::snprintf(r.text, sizeof r.text, "%s", format);  // a plain message: a '%' in it stays text
    else
      std::snprintf(r.text, sizeof r.text, format, args...);
    if (!queue_.push(r)) dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  // Consumer thread only.
  bool pop(RtLogRecord& r) noexcept { return queue_.pop(r); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  SpscQueue<RtLogRecord> queue_;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace vigil
