// WallClockWatch: notices when the wall clock (CLOCK_REALTIME) steps against CLOCK_MONOTONIC, so
// that a live source's UTC time line, anchored once at start and then counted in frames, can
// follow it. The step that matters most: a Jetson without an RTC battery boots with a stale
// clock, vigild starts, and NTP sets the clock minutes or years later; without this every
// timestamp and event time of a run lasting months would stay off by that much. NTP's slewing
// moves both clocks alike, so only steps (settimeofday, clock_settime, a leap second) change
// their difference. A step of kStepNs or more (NTP daemons slew anything under 128 ms, so a
// step that large is the clock being set) is followed at once; a smaller move only once it has
// lasted kSettleNs: some virtual machines' time agents keep the guest's clock by stepping it a
// millisecond at a time, and following each would break every stream's time line several times a
// second for a difference a receiver cannot tell from reading noise.
// Thread: the capture thread's; RT-safe (vDSO clock reads).
#pragma once

#include <cstdint>
#include <cstdlib>

#include "acquisition/chunk.hpp"
#include "core/clock.hpp"

namespace vigil {

// CLOCK_REALTIME - CLOCK_MONOTONIC now. The realtime read is bracketed by two monotonic ones and
// retried when a preemption came between them, so the error is microseconds, not a time slice.
inline int64_t utc_minus_mono_ns() noexcept {
  int64_t best = 0, best_span = INT64_MAX;
  for (int i = 0; i < 4; ++i) {
    const int64_t before = mono_now_ns(), utc = utc_now_ns(), after = mono_now_ns();
    if (after - before < best_span) {
      best_span = after - before;
      best = utc - (before + (after - before) / 2);
    }
    if (best_span < 20'000) break;
  }
  return best;
}

class WallClockWatch {
 public:
  // Differences up to this are reading noise, not a step.
  static constexpr int64_t kToleranceNs = 1'000'000;
  // A move this large is followed at once; a smaller one (beyond the tolerance) once it has
  // lasted kSettleNs, so the time line is never further than that from the wall clock for longer.
  static constexpr int64_t kStepNs = 100'000'000;
  static constexpr int64_t kSettleNs = 10'000'000'000;

  // Looked at no more often than this (three clock reads; S3's chunks come every 10 us unpaced).
  static constexpr int64_t kIntervalNs = 1'000'000;

  // Remembers the difference the time line was anchored at.
  void anchor(int64_t offset_ns) noexcept { offset_ns_ = offset_ns; }
  // Whether to look again at monotonic time mono_ns (then not before kIntervalNs later).
  bool due(int64_t mono_ns) noexcept {
    if (mono_ns < next_ns_) return false;
    next_ns_ = mono_ns + kIntervalNs;
    return true;
  }
  // The step since the anchor or the last step (ns, negative: the clock went back) as seen at
  // monotonic time mono_ns, or 0: within the tolerance, or a small move not yet kSettleNs old.
  // A step becomes the new anchor.
  int64_t step(int64_t offset_ns, int64_t mono_ns) noexcept {
    const int64_t d = offset_ns - offset_ns_;
    const int64_t size = std::llabs(d);
    if (size <= kToleranceNs) {
      moved_since_ns_ = kNotMoved;
      return 0;
    }
    if (size < kStepNs) {
      if (moved_since_ns_ == kNotMoved) moved_since_ns_ = mono_ns;
      if (mono_ns - moved_since_ns_ < kSettleNs) return 0;
    }
    offset_ns_ = offset_ns;
    moved_since_ns_ = kNotMoved;
    return d;
  }

 private:
  static constexpr int64_t kNotMoved = INT64_MIN;
  int64_t offset_ns_ = 0;
  int64_t next_ns_ = 0;
  int64_t moved_since_ns_ = kNotMoved;  // when the difference first left the tolerance
};

// Per chunk of a live source whose frame 0 is at `start_utc_ns`, at monotonic time mono_ns: a step
// of the wall clock (WallClockWatch::step) moves the time line by it, from this chunk on, and
// flags the chunk.
inline void follow_wall_clock(WallClockWatch& watch, int64_t mono_ns, int64_t& start_utc_ns, ChunkHeader& h) noexcept {
  if (!watch.due(mono_ns)) return;
  if (const int64_t step = watch.step(utc_minus_mono_ns(), mono_ns)) {
    start_utc_ns += step;
    h.flags |= chunk_flags::kClockStepped;
    h.clock_step_ns += step;
  }
}

}  // namespace vigil
