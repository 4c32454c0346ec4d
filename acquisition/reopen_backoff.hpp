// ReopenBackoff: when a device that went away is tried again: 0.1 s after it went, then with the
// wait doubling after each failed try, up to 5 s. Shared by the sources that reopen a device
// (ALSA, IIO). Thread: the capture thread's; RT-safe.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vigil {

class ReopenBackoff {
 public:
  static constexpr int64_t kFirstNs = 100'000'000, kMaxNs = 5'000'000'000;
  // The device went away at now_ns: the first try is kFirstNs later.
  void start(int64_t now_ns) noexcept {
    wait_ns_ = kFirstNs;
    retry_at_ns_ = now_ns + wait_ns_;
  }
  // Whether a try is due at now_ns.
  bool due(int64_t now_ns) const noexcept { return now_ns >= retry_at_ns_; }
  // The try at now_ns failed: the next waits twice as long, at most kMaxNs.
  void failed(int64_t now_ns) noexcept {
    wait_ns_ = std::min(wait_ns_ * 2, kMaxNs);
    retry_at_ns_ = now_ns + wait_ns_;
  }

 private:
  int64_t retry_at_ns_ = 0, wait_ns_ = kFirstNs;
};

}  // namespace vigil
