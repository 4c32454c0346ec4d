// WindowedRms: root-mean-square over consecutive, non-overlapping windows of a stream.
#pragma once

#include <algorithm>
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
    for (uint32_t i = 0; i < n;) {
      const auto take = uint32_t(std::min<uint64_t>(n - i, window_ - count_));
      sum_sq_ += sum_of_squares(x + i, take);
      count_ += take;
      i += take;
      if (count_ == window_) {
        on_window(std::sqrt(sum_sq_ / double(window_)), i - 1);
        sum_sq_ = 0.0;
        count_ = 0;
      }
    }
  }

  // The sum of x[0..n)'s squares in double, over eight running sums that the compiler keeps in
  // vector registers (one running sum would serialise every addition behind the one before).
  static double sum_of_squares(const float* x, uint32_t n) noexcept {
    double acc[8] = {};
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (uint32_t j = 0; j < 8; ++j) acc[j] += double(x[i + j]) * double(x[i + j]);
    for (; i < n; ++i) acc[i & 7] += double(x[i]) * double(x[i]);
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  }

  // Samples until the current window completes (1..window).
  uint64_t remaining() const noexcept { return window_ - count_; }
  // A run of n samples whose squares sum to sum_sq (n <= remaining(): a run never crosses a
  // window's end), as push() of those samples would take it, up to the order of the additions;
  // on_window(rms, last) when it completes the window. RT-safe.
  template <typename F>
  void add(double sum_sq, uint64_t n, uint32_t last, F&& on_window) noexcept {
    sum_sq_ += sum_sq;
    count_ += n;
    if (count_ >= window_) {
      on_window(std::sqrt(sum_sq_ / double(window_)), last);
      sum_sq_ = 0.0;
      count_ = 0;
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
