// FirBank: N band filters over each of C channels, direct form, history carried across calls.
// Plain math (no threads, no config); pipeline/fir_bank_stage wraps it. Lifecycle as liquid-dsp:
// construct -> process (repeatedly) -> reset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vigil {

class FirBank {
 public:
  // band_taps:  1..256 bands, each 1..65536 taps (lengths may differ).
  // channels:   1..4096.
  // max_frames: 1..2^24, the most frames one process() call may carry.
  // Throws std::invalid_argument naming the parameter and range.
  FirBank(std::vector<std::vector<float>> band_taps, uint32_t channels, uint32_t max_frames);

  // y_b[n] = sum_k h_b[k] x[n-k], x before the first call being 0 (scipy lfilter(h, 1, x)).
  // in:  channel c at in + c * in_stride (in_stride >= frames).
  // out: band b, channel c at out + (b * channels + c) * out_stride (out_stride >= frames).
  // frames: 0..max_frames. RT-safe: no allocation.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out,
               size_t out_stride) noexcept;

  // As process() without computing outputs: the history (and a pending crossfade) advance as if
  // the frames had been filtered, at the cost of a copy. Any number of frames. RT-safe.
  void prime(const float* in, size_t in_stride, uint32_t frames) noexcept;

  // Stages new taps (same band count, each 1..65536 long; a longer filter than the longest so far
  // is refused because the history would not hold it). Not RT-safe (allocates). The next
  // crossfade_frames outputs blend linearly from the old to the new filters, computed on the same
  // input, so they stay between the two filters' outputs. Throws std::invalid_argument.
  void set_taps(std::vector<std::vector<float>> band_taps, uint32_t crossfade_frames = 256);
  bool crossfade_pending() const noexcept { return fade_total_ > 0; }

  // Forget the history (as if no input had been seen).
  void reset() noexcept;

  uint32_t bands() const noexcept { return uint32_t(taps_reversed_.size()); }
  uint32_t channels() const noexcept { return channels_; }
  uint32_t max_frames() const noexcept { return max_frames_; }
  const std::vector<float>& taps(uint32_t band) const noexcept { return taps_[band]; }

 private:
  void advance_fade(uint32_t frames) noexcept;  // a crossfade's progress; the new taps once it is done

  std::vector<std::vector<float>> taps_;
  std::vector<std::vector<float>> taps_reversed_;
  uint32_t channels_;
  uint32_t max_frames_;
  size_t history_;             // longest filter - 1
  std::vector<float> work_;    // per channel: [history_ past samples | max_frames_ new samples]
  // Crossfade state (set_taps).
  std::vector<std::vector<float>> next_taps_, next_reversed_;
  std::vector<float> fade_scratch_;  // max_frames_ outputs of the new filter
  uint32_t fade_total_ = 0, fade_done_ = 0;
};

}  // namespace vigil
