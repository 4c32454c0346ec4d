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
  // starts is silence). Allocates; or, with `storage` (lanes x frames floats, e.g. page-locked for
  // a device copy into it), keeps them there.
  void assign(uint32_t lanes, uint32_t frames, float* storage = nullptr) {
    lanes_ = lanes;
    frames_ = frames;
    owned_.assign(storage ? 0 : size_t(lanes) * frames, 0.0f);
    ring_ = storage ? storage : owned_.data();
    std::fill_n(ring_, size_t(lanes) * frames, 0.0f);
    pos_ = 0;
  }
  uint32_t frames() const noexcept { return frames_; }

  // Where appending `frames` frames puts them: up to two pieces (the ring wraps), each `count`
  // frames from input frame `src` to ring position `dst` (lane l of the ring at data() +
  // l * frames()); only the newest frames() frames are kept. Returns the number of pieces.
  struct Piece {
    uint32_t src, dst, count;
  };
  unsigned pieces(uint32_t frames, Piece (&out)[2]) const noexcept {
    const uint32_t n = std::min(frames, frames_);
    const uint32_t skip = frames - n;  // only the newest frames_ matter
    const uint32_t first = std::min(n, frames_ - pos_);
    out[0] = {skip, pos_, first};
    out[1] = {skip + first, 0, n - first};
    return n > first ? 2 : 1;
  }
  // After the pieces of `frames` frames were written (by a device copy): they are the newest.
  void advance(uint32_t frames) noexcept { pos_ = uint32_t((pos_ + uint64_t(std::min(frames, frames_))) % frames_); }
  float* data() const noexcept { return ring_; }
  // The ring position the next frames go to (pieces()' first dst).
  uint32_t head() const noexcept { return pos_; }

  // Appends `frames` frames of each lane (lane l at in + l * stride). RT-safe.
  void remember(const float* in, size_t stride, uint32_t frames) noexcept {
    Piece p[2];
    const unsigned count = pieces(frames, p);
    for (uint32_t l = 0; l < lanes_; ++l)
      for (unsigned i = 0; i < count; ++i)
        std::memcpy(ring_ + size_t(l) * frames_ + p[i].dst, in + l * stride + p[i].src, p[i].count * sizeof(float));
    advance(frames);
  }

  // The newest k (<= frames()) frames of each lane, oldest first, to dst (lane l at
  // dst + l * dst_stride). RT-safe.
  void newest(uint32_t k, float* dst, size_t dst_stride) const noexcept {
    for (uint32_t l = 0; l < lanes_; ++l) {
      const float* ring = ring_ + size_t(l) * frames_;
      float* out = dst + l * dst_stride;
      const uint32_t start = (pos_ + frames_ - k) % frames_;
      const uint32_t first = std::min(k, frames_ - start);
      std::memcpy(out, ring + start, first * sizeof(float));
      std::memcpy(out + first, ring, (k - first) * sizeof(float));
    }
  }

  void clear() noexcept {
    std::fill_n(ring_, size_t(lanes_) * frames_, 0.0f);
    pos_ = 0;
  }

 private:
  uint32_t lanes_ = 0, frames_ = 0, pos_ = 0;
  std::vector<float> owned_;
  float* ring_ = nullptr;  // owned_ or the caller's storage
};

}  // namespace vigil
