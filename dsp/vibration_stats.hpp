// WindowedVibrationStats: condition-monitoring statistics of a stream over windows of W samples
// advancing by H (H <= W): RMS, peak |x|, peak-to-peak, crest factor and kurtosis. The math the
// `vibration` detector stage (issue 5) builds on. Streaming: results do not depend on how the
// stream is cut into calls. No allocation after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vigil {

struct VibrationStats {
  double rms = 0;           // sqrt(mean(x^2)), DC included (remove DC upstream when it matters)
  double peak = 0;          // max |x|
  double peak_to_peak = 0;  // max x - min x
  double crest_factor = 0;  // peak / rms (0 for a silent window)
  double kurtosis = 0;      // Pearson: m4 / m2^2 of the mean-removed window (3 for Gaussian noise;
                            // scipy.stats.kurtosis(x, fisher=False)); 0 for a constant window
  uint64_t end_frame = 0;   // index (since the start of the stream) of the window's last sample
};

// The statistics of n >= 1 samples (order does not matter); end_frame left 0.
VibrationStats vibration_stats(const float* x, size_t n) noexcept;
// The same of the samples a[0..na) and b[0..nb) together, na + nb >= 1: a window that wraps
// around a ring, without unrolling it first.
VibrationStats vibration_stats(const float* a, size_t na, const float* b, size_t nb) noexcept;

class WindowedVibrationStats {
 public:
  // window: 2..2^24 samples; hop: 1..window. Throws std::invalid_argument naming the range.
  WindowedVibrationStats(uint32_t window, uint32_t hop);

  // Feeds n samples; calls on_window(const VibrationStats&) for every window that completes
  // (the first after `window` samples, then every `hop`). RT-safe.
  template <typename F>
  void push(const float* x, uint32_t n, F&& on_window) {
    for (uint32_t i = 0; i < n; ++i) {
      ring_[pos_] = x[i];
      pos_ = pos_ + 1 == window_ ? 0 : pos_ + 1;
      ++seen_;
      if (seen_ >= window_ && (seen_ - window_) % hop_ == 0) on_window(compute());
    }
  }

  void reset() noexcept;
  uint32_t window() const noexcept { return window_; }
  uint32_t hop() const noexcept { return hop_; }

 private:
  VibrationStats compute() const noexcept;

  uint32_t window_, hop_;
  std::vector<float> ring_;
  uint32_t pos_ = 0;
  uint64_t seen_ = 0;
};

}  // namespace vigil
