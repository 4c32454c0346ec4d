#include "dsp/median_abs.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>

namespace vigil {

MedianAbs::MedianAbs(size_t max_n) : keys_(max_n), gathered_(max_n), counts_(kHistograms << kBucketBits, 0u) {}

float MedianAbs::operator()(const float* v, size_t n) noexcept {
  constexpr unsigned shift = 31 - kBucketBits;  // bit 31 (the sign) is 0 for |v|
  constexpr size_t buckets = size_t(1) << kBucketBits;
  uint32_t* __restrict keys = keys_.data();
  uint32_t* __restrict counts = counts_.data();  // all zero between calls
  float* __restrict g = gathered_.data();
  // The keys, and their least and largest, in a loop that vectorises. The keys are below 2^31:
  // signed compares order them alike (SSE2 has no unsigned ones).
  int32_t least = INT32_MAX, largest = 0;
  for (size_t i = 0; i < n; ++i) {
    keys[i] = std::bit_cast<uint32_t>(std::fabs(v[i]));
    least = std::min(least, int32_t(keys[i]));
    largest = std::max(largest, int32_t(keys[i]));
  }
  // Counted in four histograms, value i in histogram i % 4: noise puts neighbours in the same few
  // buckets, and in one histogram each increment would wait for the last one's store.
  size_t i = 0;
  for (; i + kHistograms <= n; i += kHistograms)
    for (size_t h = 0; h < kHistograms; ++h) ++counts[h * buckets + (keys[i + h] >> shift)];
  for (; i < n; ++i) ++counts[keys[i] >> shift];
  // The bucket holding rank `mid` (0-based, the upper middle for an even count). Only the buckets
  // between the least and the largest key were counted; they are cleared on the way.
  const size_t mid = n / 2;
  const uint32_t first = uint32_t(least) >> shift, last = uint32_t(largest) >> shift;
  size_t below = 0;
  uint32_t bucket = last + 1;
  for (uint32_t b = first; b <= last; ++b) {
    size_t c = 0;
    for (size_t h = 0; h < kHistograms; ++h) {
      c += counts[h * buckets + b];
      counts[h * buckets + b] = 0;
    }
    if (bucket > last) {
      if (below + c > mid)
        bucket = b;
      else
        below += c;
    }
  }
  // Its values: a few percent of them for noise-like data, so eight keys at a time are tested
  // together (a vector compare) and looked at one by one only when one of them is in the bucket.
  const auto lo = int32_t(bucket << shift);
  const auto hi = int32_t(std::min<uint32_t>((bucket + 1) << shift, INT32_MAX));  // a NaN's bits: never
  auto in_bucket = [lo, hi](uint32_t k) { return int32_t(k) >= lo && int32_t(k) < hi; };
  size_t m = 0;
  for (i = 0; i + 8 <= n; i += 8) {
    int any = 0;
    for (size_t j = 0; j < 8; ++j) any |= int(in_bucket(keys[i + j]));
    if (!any) continue;
    for (size_t j = 0; j < 8; ++j)
      if (in_bucket(keys[i + j])) g[m++] = std::bit_cast<float>(keys[i + j]);
  }
  for (; i < n; ++i)
    if (in_bucket(keys[i])) g[m++] = std::bit_cast<float>(keys[i]);
  const size_t rank = mid - below;
  std::nth_element(g, g + rank, g + m);
  const float upper = g[rank];
  if (n % 2) return upper;
  if (rank > 0) return 0.5f * (*std::max_element(g, g + rank) + upper);
  // The lower middle is the largest value below the bucket.
  int32_t lower = 0;
  for (i = 0; i < n; ++i) {
    const auto k = int32_t(keys[i]);
    lower = std::max(lower, k < lo ? k : 0);
  }
  return 0.5f * (std::bit_cast<float>(lower) + upper);
}

}  // namespace vigil
