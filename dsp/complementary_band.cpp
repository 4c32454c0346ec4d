// RT: process() on the pipeline thread or a pool helper.
#include "dsp/complementary_band.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vigil {

ComplementaryBand::ComplementaryBand(uint32_t channels, uint32_t delay_frames, uint32_t max_frames)
    : channels_(channels), delay_(delay_frames) {
  if (channels < 1 || channels > 4096)
    throw std::invalid_argument("ComplementaryBand: channels must be 1..4096, got " + std::to_string(channels));
  if (delay_frames > (1u << 24))
    throw std::invalid_argument("ComplementaryBand: delay_frames must be 0..16777216, got " + std::to_string(delay_frames));
  if (max_frames < 1 || max_frames > (1u << 24))
    throw std::invalid_argument("ComplementaryBand: max_frames must be 1..16777216, got " + std::to_string(max_frames));
  size_ = 16;
  while (size_ < size_t(delay_frames) + max_frames) size_ *= 2;
  mask_ = size_ - 1;
  ring_ = make_fftw_buffer(size_t(channels) * size_);
}

void ComplementaryBand::reset() noexcept {
  std::fill_n(ring_.get(), size_t(channels_) * size_, 0.0f);
  write_ = 0;
}

void ComplementaryBand::process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride,
                                size_t band_stride, uint32_t others) noexcept {
  // The ring holds delay + max_frames samples: writing this call's frames first never overwrites
  // the oldest one read below (it lies delay samples before the first frame written).
  const size_t read = (write_ + size_ - delay_) & mask_;
  for (uint32_t c = 0; c < channels_; ++c) {
    float* ring = ring_.get() + size_t(c) * size_;
    const float* x = in + c * in_stride;
    for (uint32_t done = 0; done < frames;) {
      const size_t at = (write_ + done) & mask_;
      const size_t n = std::min<size_t>(frames - done, size_ - at);
      std::copy_n(x + done, n, ring + at);
      done += uint32_t(n);
    }
    float* __restrict top = out + size_t(others) * band_stride + c * out_stride;
    for (uint32_t done = 0; done < frames;) {
      const size_t at = (read + done) & mask_;
      const size_t n = std::min<size_t>(frames - done, size_ - at);
      std::copy_n(ring + at, n, top + done);
      done += uint32_t(n);
    }
    for (uint32_t b = 0; b < others; ++b) {
      const float* __restrict y = out + size_t(b) * band_stride + c * out_stride;
      for (uint32_t i = 0; i < frames; ++i) top[i] -= y[i];
    }
  }
  write_ = (write_ + frames) & mask_;
}

long ComplementaryBand::impulse_delay(const std::vector<std::vector<float>>& band_taps, double tolerance) {
  if (band_taps.size() < 2) return -1;
  const size_t m = band_taps[0].size();
  for (const auto& h : band_taps)
    if (h.size() != m) return -1;
  long delay = -1;
  for (size_t i = 0; i < m; ++i) {
    double sum = 0;
    for (const auto& h : band_taps) sum += h[i];
    if (std::fabs(sum - 1.0) <= tolerance && delay < 0) {
      delay = long(i);
    } else if (!(std::fabs(sum) <= tolerance)) {
      return -1;
    }
  }
  return delay;
}

}  // namespace vigil
