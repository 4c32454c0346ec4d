#include "core/latency_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace vigil {
namespace {

TEST(LatencyHistogram, QuantilesWithinBucketResolution) {
  LatencyHistogram h;
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> d(7.0, 1.0);  // median ~1100 us
  std::vector<uint64_t> v;
  for (int i = 0; i < 100000; ++i) {
    v.push_back(uint64_t(d(rng)));
    h.record_us(v.back());
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(h.count(), v.size());
  EXPECT_EQ(h.max_us(), v.back());
  for (double q : {0.5, 0.9, 0.99}) {
    const double exact = double(v[size_t(q * double(v.size())) - 1]);
    const double got = double(h.quantile_us(q));
    EXPECT_GE(got, exact * 0.999) << q;   // the bucket's upper edge is never below
    EXPECT_LE(got, exact * 1.0625 + 1) << q;
  }
}

TEST(LatencyHistogram, EmptyAndSmallValues) {
  LatencyHistogram h;
  EXPECT_EQ(h.quantile_us(0.5), 0u);
  for (uint64_t us = 0; us < 16; ++us) EXPECT_EQ(LatencyHistogram::upper_edge(LatencyHistogram::bucket_of(us)), us);
  h.record_ns(-5);  // clock oddity: counted as 0
  h.record_us(3);
  EXPECT_EQ(h.quantile_us(1.0), 3u);
  EXPECT_EQ(h.quantile_us(0.5), 0u);
}

TEST(LatencyHistogram, BucketEdgesAreMonotonic) {
  for (uint64_t us : {16ull, 17ull, 31ull, 32ull, 1000ull, 123456ull, 1ull << 35}) {
    const int b = LatencyHistogram::bucket_of(us);
    EXPECT_GE(LatencyHistogram::upper_edge(b), us);
    if (b > 0) {
      EXPECT_LT(LatencyHistogram::upper_edge(b - 1), us);
    }
  }
}

}  // namespace
}  // namespace vigil
