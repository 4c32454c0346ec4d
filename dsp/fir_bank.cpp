// Direct-form FIR bank. Each lane's outputs are weighted sums of sliding rows of its history
// (dsp/row_sums: 32 or 64 outputs accumulate in registers while the taps stream past). Every output
// sums its products in tap order, so results do not depend on where a chunk boundary falls.
#include "dsp/fir_bank.hpp"

#include "dsp/row_sums.hpp"

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

void FirBank::set_taps(std::vector<std::vector<float>> band_taps, uint32_t crossfade_frames) {
  if (band_taps.size() != taps_.size())
    throw std::invalid_argument("FirBank::set_taps: expected " + std::to_string(taps_.size()) + " bands, got " +
                                std::to_string(band_taps.size()));
  for (size_t b = 0; b < band_taps.size(); ++b)
    if (band_taps[b].empty() || band_taps[b].size() > history_ + 1)
      throw std::invalid_argument("FirBank::set_taps: band " + std::to_string(b) + " taps must be 1.." +
                                  std::to_string(history_ + 1) + ", got " + std::to_string(band_taps[b].size()));
  if (crossfade_frames < 1)
    throw std::invalid_argument("FirBank::set_taps: crossfade_frames must be >= 1, got 0");
  // Everything that allocates before anything changes: a failure leaves a crossfade under way intact.
  std::vector<std::vector<float>> reversed;
  for (const auto& t : band_taps) reversed.emplace_back(t.rbegin(), t.rend());
  if (fade_scratch_.size() != max_frames_) fade_scratch_.assign(max_frames_, 0.0f);
  next_reversed_ = std::move(reversed);
  next_taps_ = std::move(band_taps);
  fade_total_ = crossfade_frames;
  fade_done_ = 0;
}

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
      float* y = out + (size_t(b) * channels_ + c) * out_stride;
      // x[n - k] for k = len-1-j sits at buf[history_ + n - (len - 1) + j].
      row_sums::sliding(hr.data(), buf + history_ - (len - 1), len, frames, y);
      if (fade_total_ == 0) continue;
      const std::vector<float>& nr = next_reversed_[b];
      row_sums::sliding(nr.data(), buf + history_ - (nr.size() - 1), nr.size(), frames, fade_scratch_.data());
      for (uint32_t n = 0; n < frames; ++n) {
        const uint32_t k = fade_done_ + n + 1;  // 1..fade_total_: all new on the last faded sample
        const float w = k >= fade_total_ ? 1.0f : float(k) / float(fade_total_);
        y[n] = (1.0f - w) * y[n] + w * fade_scratch_[n];
      }
    }
    // Keep the last history_ samples (old history followed by new input) for the next call.
    std::copy(buf + frames, buf + frames + history_, buf);
  }
  advance_fade(frames);
}

void FirBank::advance_fade(uint32_t frames) noexcept {
  if (fade_total_ == 0) return;
  fade_done_ += frames;
  if (fade_done_ >= fade_total_) {  // the new filters take over for good
    taps_ = std::move(next_taps_);
    taps_reversed_ = std::move(next_reversed_);
    fade_total_ = fade_done_ = 0;
  }
}

void FirBank::prime(const float* in, size_t in_stride, uint32_t frames) noexcept {
  const size_t row = history_ + max_frames_;
  for (uint32_t c = 0; c < channels_; ++c) {
    float* buf = work_.data() + c * row;
    const float* x = in + c * in_stride;
    if (frames >= history_) {
      std::copy_n(x + (frames - history_), history_, buf);
    } else {
      std::copy(buf + frames, buf + history_, buf);
      std::copy_n(x, frames, buf + (history_ - frames));
    }
  }
  advance_fade(frames);
}

}  // namespace vigil
