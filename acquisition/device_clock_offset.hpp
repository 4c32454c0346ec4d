// DeviceClockOffset: how far a capture device's chunks arrive from where its frame count puts
// them on the monotonic clock. A device's crystal is off by tens of ppm, so over a long run the
// frame count and the clock part by seconds a week; an overrun's loss is measured as the time the
// device was not read, and must be measured from where its chunks have lately been arriving, not
// from where they were at start (a 10 ms glitch after a week at 50 ppm would otherwise count 30 s
// of frames as lost). The median of the last chunks' offsets: one late wake-up moves it by
// nothing. Thread: the capture thread's; RT-safe (no allocation).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace vigil {

class DeviceClockOffset {
 public:
  static constexpr size_t kChunks = 31;  // odd: the median is one of them

  // A chunk that arrived offset_ns after (negative: before) where the frame count put it.
  void add(int64_t offset_ns) noexcept {
    ring_[next_] = offset_ns;
    next_ = (next_ + 1) % kChunks;
    count_ = std::min(count_ + 1, kChunks);
  }
  // The median of the last kChunks offsets (fewer at first); 0 before any.
  int64_t median() const noexcept {
    if (count_ == 0) return 0;
    std::array<int64_t, kChunks> v = ring_;
    const auto mid = v.begin() + count_ / 2;
    std::nth_element(v.begin(), mid, v.begin() + count_);
    return *mid;
  }

 private:
  std::array<int64_t, kChunks> ring_{};
  size_t next_ = 0, count_ = 0;
};

}  // namespace vigil
