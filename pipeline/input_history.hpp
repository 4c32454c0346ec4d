// InputHistory: the newest frames of every lane of a stage's input, in a ring. A CUDA stage keeps
// it so that, on a CUDA error, it can replay recent input into its CPU twin and carry on exactly
// where the GPU left off. Thread: the pipeline thread. Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace vigil {

class InputHistory {
 public:
  // Keeps `frames` frames of each of `lanes` lanes, all zero to start (the input before a stream
  // starts is silence). Allocates.
  void assign(uint32_t lanes, uint32_t frames) {
    lanes_ = lanes;
    frames_ = frames;
    ring_.assign(size_t(lanes) * frames, 0.0f);
    pos_ = 0;
  }
  uint32_t frames() const noexcept { return frames_; }

  // Appends `frames` frames of each lane (lane l at in + l * stride). RT-safe.
  void remember(const float* in, size_t stride, uint32_t frames) noexcept {
    const uint32_t n = std::min(frames, frames_);
    const uint32_t skip = frames - n;  // only the newest frames_ matter
    for (uint32_t l = 0; l < lanes_; ++l) {
      float* ring = ring_.data() + size_t(l) * frames_;
      const float* src = in + l * stride + skip;
      const uint32_t first = std::min(n, frames_ - pos_);
      std::memcpy(ring + pos_, src, first * sizeof(float));
      std::memcpy(ring, src + first, (n - first) * sizeof(float));
    }
    pos_ = (pos_ + n) % frames_;
  }

  // The newest k (<= frames()) frames of each lane, oldest first, to dst (lane l at
  // dst + l * dst_stride). RT-safe.
  void newest(uint32_t k, float* dst, size_t dst_stride) const noexcept {
    for (uint32_t l = 0; l < lanes_; ++l) {
      const float* ring = ring_.data() + size_t(l) * frames_;
      float* out = dst + l * dst_stride;
      const uint32_t start = (pos_ + frames_ - k) % frames_;
      const uint32_t first = std::min(k, frames_ - start);
      std::memcpy(out, ring + start, first * sizeof(float));
      std::memcpy(out + first, ring, (k - first) * sizeof(float));
    }
  }

  void clear() noexcept {
    std::fill(ring_.begin(), ring_.end(), 0.0f);
    pos_ = 0;
  }

 private:
  uint32_t lanes_ = 0, frames_ = 0, pos_ = 0;
  std::vector<float> ring_;
};

}  // namespace vigil
