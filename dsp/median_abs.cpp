#include "dsp/median_abs.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace vigil {

MedianAbs::MedianAbs(size_t max_n) : keys_(max_n), gathered_(max_n), counts_(size_t(1) << kBucketBits) {}

float MedianAbs::operator()(const float* v, size_t n) noexcept {
  constexpr unsigned shift = 31 - kBucketBits;  // bit 31 (the sign) is 0 for |v|
  std::fill(counts_.begin(), counts_.end(), 0u);
  uint32_t* keys = keys_.data();
  for (size_t i = 0; i < n; ++i) {
    keys[i] = std::bit_cast<uint32_t>(std::fabs(v[i]));
    ++counts_[keys[i] >> shift];
  }
  // The bucket holding rank `mid` (0-based, the upper middle for an even count).
  const size_t mid = n / 2;
  size_t below = 0;
  uint32_t bucket = 0;
  while (below + counts_[bucket] <= mid) below += counts_[bucket++];
  // Its values, and the largest value below it (the lower middle when it is the bucket's first).
  size_t m = 0;
  uint32_t below_max = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = keys[i] >> shift;
    if (b == bucket)
      gathered_[m++] = std::bit_cast<float>(keys[i]);
    else if (b < bucket)
      below_max = std::max(below_max, keys[i]);
  }
  float* g = gathered_.data();
  const size_t rank = mid - below;
  std::nth_element(g, g + rank, g + m);
  const float upper = g[rank];
  if (n % 2) return upper;
  const float lower = rank > 0 ? *std::max_element(g, g + rank) : std::bit_cast<float>(below_max);
  return 0.5f * (lower + upper);
}

}  // namespace vigil
