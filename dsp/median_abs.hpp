// median_abs: the median of |v| (numpy's: the mean of the two middle values for an even count),
// exactly, by a radix select instead of std::nth_element. Non-negative floats order like their bit
// patterns, so one pass counts the values by their top 11 bits (exponent and 3 mantissa bits), the
// bucket holding the middle rank is found by a prefix sum, and only that bucket's values (a few
// percent of them for noise-like data) are gathered and selected from. The wavelet denoiser takes
// its noise estimate from this, per window: with nth_element it was a quarter of S1's CPU time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vigil {

class MedianAbs {
 public:
  // For inputs of up to max_n values (allocates here, never in operator()).
  explicit MedianAbs(size_t max_n);
  // v: 1..max_n finite values. RT-safe.
  float operator()(const float* v, size_t n) noexcept;

 private:
  static constexpr unsigned kBucketBits = 11;
  static constexpr size_t kHistograms = 4;  // interleaved (see operator())
  std::vector<uint32_t> keys_;    // |v| as bits
  std::vector<float> gathered_;   // the middle bucket's values
  std::vector<uint32_t> counts_;  // per histogram and bucket; all zero between calls
};

}  // namespace vigil
