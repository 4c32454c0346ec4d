// ComplementaryBand: the last band of a complementary bank from the others. Bands that sum to a
// unit impulse at delay D (design_crossover's: band K = delta - LP(e_{K-1})) filter the input
// into parts that add up to the input delayed by D, so the last band is that delayed input minus
// the other bands:
//
//   y_K[n - L] = x[n - L - D] - sum_{b < K} y_b[n - L]   (each y_b already L samples late)
//
// one subtraction per sample and band instead of the last band's spectral products and inverse
// FFT (a quarter of a 4-band crossover's work). It keeps the input's last L + D samples per
// channel in a ring (zeros before the stream, as the filters' own state). RT: process() on the
// pipeline thread (or a pool helper, for its own channels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dsp/real_fft.hpp"

namespace vigil {

class ComplementaryBand {
 public:
  // channels: 1..4096; delay_frames: L + D, 0..2^24; max_frames: the largest process() call,
  // 1..2^24. Throws std::invalid_argument naming the parameter and its range.
  ComplementaryBand(uint32_t channels, uint32_t delay_frames, uint32_t max_frames);

  // in: channel c at in + c * in_stride (the input the bank was given). out: band b, channel c at
  // out + b * band_stride + c * out_stride, bands 0..others-1 already filtered; writes band `others`.
  // RT-safe: no allocation.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride, size_t band_stride,
               uint32_t others) noexcept;
  void reset() noexcept;

  // The delay D at which band_taps sum to a unit impulse, each tap of the sum within `tolerance`
  // of the impulse's (1 at D, 0 elsewhere); -1 when they do not (or fewer than 2 bands, or bands
  // of different lengths).
  static long impulse_delay(const std::vector<std::vector<float>>& band_taps, double tolerance);

 private:
  uint32_t channels_, delay_;
  size_t size_, mask_;  // ring: a power of two >= delay + max_frames
  size_t write_ = 0;    // ring position of the next input sample (the same for every channel)
  FftwBuffer ring_;     // channels_ x size_
};

}  // namespace vigil
