// Pace: the clock of a paced source (synthetic, or a file replayed at rate_factor > 0): when each
// frame is due, and the wait for a chunk's last frame, counting the chunks it could not deliver in
// time. A device of that rate would have overrun its buffer there; a generated or replayed source
// loses nothing, but its samples then come slower than the rate says, and no deadline shows it
// (each chunk's latency starts when it is delivered). Capture thread; the counts any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/clock.hpp"

namespace vigil {

class Pace {
 public:
  // Frame 0 is due at start_ns; frames follow at rate_hz x rate_factor (both > 0); a chunk of
  // chunk_frames is one period, the lead a device's buffer of one chunk would give.
  void start(int64_t start_ns, double rate_hz, double rate_factor, uint32_t chunk_frames) noexcept {
    start_ns_ = start_ns;
    rate_hz_ = rate_hz;
    rate_factor_ = rate_factor;
    period_ns_ = int64_t(double(frames_to_ns(chunk_frames, rate_hz)) / rate_factor);
  }
  // When the stream has produced `frames` frames (frame `frames - 1` is due then).
  int64_t due_ns(uint64_t frames) const noexcept {
    return start_ns_ + int64_t(double(frames_to_ns(frames, rate_hz_)) / rate_factor_);
  }
  int64_t period_ns() const noexcept { return period_ns_; }
  // Sleeps until a chunk ending after `frames` frames is due, or counts it late where the clock is
  // already more than one period past that.
  void wait_for(uint64_t frames) noexcept { wait_until(due_ns(frames), period_ns_); }
  uint64_t late_chunks() const noexcept { return late_chunks_.load(std::memory_order_relaxed); }

 private:
  // Sleeps until due_ns, or counts the chunk late where the clock is already more than slack_ns
  // past it.
  void wait_until(int64_t due_ns, int64_t slack_ns) noexcept {
    const int64_t lag = mono_now_ns() - due_ns;
    if (lag > slack_ns) {
      late_chunks_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    sleep_until_mono_ns(due_ns);
  }

  int64_t start_ns_ = 0;
  double rate_hz_ = 1;
  double rate_factor_ = 1;
  int64_t period_ns_ = 0;
  std::atomic<uint64_t> late_chunks_{0};
};

}  // namespace vigil
