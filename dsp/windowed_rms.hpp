// WindowedRms: root-mean-square over consecutive, non-overlapping windows of a stream.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace vigil {

class WindowedRms {
 public:
  // window_frames: 1..2^31 samples per RMS value.
  explicit WindowedRms(uint64_t window_frames) : window_(window_frames) {
    if (window_frames < 1 || window_frames > (1ull << 31))
      throw std::invalid_argument("WindowedRms: window_frames must be 1..2147483648, got " +
                                  std::to_string(window_frames));
  }

  // Feeds n samples; calls on_window(rms, i) for each window that completes, where i is the
  // index in x of the window's last sample. RT-safe: no allocation.
  template <typename F>
  void push(const float* x, uint32_t n, F&& on_window) noexcept {
    for (uint32_t i = 0; i < n; ++i) {
      const double v = x[i];
      sum_sq_ += v * v;
      if (++count_ == window_) {
        on_window(std::sqrt(sum_sq_ / double(window_)), i);
        sum_sq_ = 0.0;
        count_ = 0;
      }
    }
  }

  void reset() noexcept { sum_sq_ = 0.0; count_ = 0; }
  uint64_t window_frames() const noexcept { return window_; }

 private:
  uint64_t window_;
  uint64_t count_ = 0;
  double sum_sq_ = 0.0;
};

}  // namespace vigil
