// QuietHandoff: whether the pipeline thread hands a processed chunk to the output thread without
// waking it. Waking a sleeping thread is a system call on the waker and a context switch on the
// woken — on two cores (S3: about 12 us of work a chunk) that was a sixth of the pipeline
// thread's time, paid once a chunk. When another chunk already waits for the pipeline thread,
// the output thread can be woken once for several: the chunk handed over quietly waits at most
// for the next one's processing. Bounded so that a slow chunk is never held back: a quiet
// hand-off is allowed only while the first quiet chunk's added wait (the time since it, plus the
// chunk now done, as the next one's estimate) stays within kBudgetNs, and for at most max_quiet
// chunks in a row (fewer than the output slots, so the pipeline never waits for a slot that a
// sleeping output thread holds). Only for an unpaced source (PipelineWorker): a paced source's
// chunks have deadlines, and every hand-off wakes at once, as before.
#pragma once

#include <cstdint>

namespace vigil {

class QuietHandoff {
 public:
  static constexpr int64_t kBudgetNs = 100'000;

  explicit QuietHandoff(uint32_t max_quiet) noexcept : max_quiet_(max_quiet) {}

  // Called at each hand-off: now_ns when it happens, cost_ns the chunk's processing time,
  // more_input whether another chunk is already there to process. True: push quietly.
  bool quiet(int64_t now_ns, int64_t cost_ns, bool more_input) noexcept {
    const int64_t waited = quiet_ ? now_ns - t_first_ns_ : 0;
    if (!more_input || quiet_ >= max_quiet_ || waited + cost_ns > kBudgetNs) {
      quiet_ = 0;
      return false;
    }
    if (quiet_++ == 0) t_first_ns_ = now_ns;
    return true;
  }
  // The output thread was woken some other way (before the pipeline thread waits for a slot).
  void woken() noexcept { quiet_ = 0; }
  uint32_t pending() const noexcept { return quiet_; }

 private:
  uint32_t max_quiet_;
  uint32_t quiet_ = 0;  // chunks handed over quietly since the last wake
  int64_t t_first_ns_ = 0;
};

}  // namespace vigil
