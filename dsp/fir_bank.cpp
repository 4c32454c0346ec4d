// Direct-form FIR bank. The loops run tap-outer, frame-inner so the compiler vectorises the
// inner loop without -ffast-math (no reordered reduction is needed).
#include "dsp/fir_bank.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vigil {

FirBank::FirBank(std::vector<std::vector<float>> band_taps, uint32_t channels, uint32_t max_frames)
    : taps_(std::move(band_taps)), channels_(channels), max_frames_(max_frames), history_(0) {
  if (taps_.empty() || taps_.size() > 256)
    throw std::invalid_argument("FirBank: bands must be 1..256, got " + std::to_string(taps_.size()));
  if (channels < 1 || channels > 4096)
    throw std::invalid_argument("FirBank: channels must be 1..4096, got " + std::to_string(channels));
  if (max_frames < 1 || max_frames > (1u << 24))
    throw std::invalid_argument("FirBank: max_frames must be 1..16777216, got " + std::to_string(max_frames));
  size_t longest = 0;
  for (size_t b = 0; b < taps_.size(); ++b) {
    const size_t n = taps_[b].size();
    if (n < 1 || n > 65536)
      throw std::invalid_argument("FirBank: band " + std::to_string(b) + " taps must be 1..65536, got " +
                                  std::to_string(n));
    longest = std::max(longest, n);
    taps_reversed_.emplace_back(taps_[b].rbegin(), taps_[b].rend());
  }
  history_ = longest - 1;
  work_.assign((history_ + max_frames_) * channels_, 0.0f);
}

void FirBank::reset() noexcept { std::fill(work_.begin(), work_.end(), 0.0f); }

void FirBank::process(const float* in, size_t in_stride, uint32_t frames, float* out,
                      size_t out_stride) noexcept {
  if (frames > max_frames_) frames = max_frames_;  // Pre: frames <= max_frames
  const size_t row = history_ + max_frames_;
  for (uint32_t c = 0; c < channels_; ++c) {
    float* buf = work_.data() + c * row;
    std::copy_n(in + c * in_stride, frames, buf + history_);
    for (uint32_t b = 0; b < bands(); ++b) {
      const std::vector<float>& hr = taps_reversed_[b];
      const size_t len = hr.size();
      // x[n - k] for k = len-1-j sits at buf[history_ + n - (len - 1) + j].
      const float* x0 = buf + history_ - (len - 1);
      float* y = out + (size_t(b) * channels_ + c) * out_stride;
      std::fill_n(y, frames, 0.0f);
      for (size_t j = 0; j < len; ++j) {
        const float h = hr[j];
        const float* x = x0 + j;
        for (uint32_t n = 0; n < frames; ++n) y[n] += h * x[n];
      }
    }
    // Keep the last history_ samples (old history followed by new input) for the next call.
    std::copy(buf + frames, buf + frames + history_, buf);
  }
}

}  // namespace vigil
