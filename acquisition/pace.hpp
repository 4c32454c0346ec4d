// Pace: how a paced source (synthetic, or a file replayed at rate_factor > 0) waits for the time
// a chunk's last frame is due, counting the chunks it could not deliver in time. A device of that
// rate would have overrun its buffer there; a generated or replayed source loses nothing, but its
// samples then come slower than the rate says, and no deadline shows it (each chunk's latency
// starts when it is delivered). Capture thread; the counts any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "acquisition/clock.hpp"

namespace vigil {

class Pace {
 public:
  // Sleeps until due_ns, or counts the chunk late where the clock is already more than slack_ns
  // past it (one chunk period: the lead a device's buffer of one chunk would give).
  void wait_until(int64_t due_ns, int64_t slack_ns) noexcept {
    const int64_t lag = mono_now_ns() - due_ns;
    if (lag > slack_ns) {
      late_chunks_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    sleep_until_mono_ns(due_ns);
  }
  uint64_t late_chunks() const noexcept { return late_chunks_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> late_chunks_{0};
};

}  // namespace vigil
