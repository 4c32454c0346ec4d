// The radix-select median of |v| against the obvious one (std::nth_element on a copy, numpy's
// even-count rule), exactly, on data chosen to stress the buckets: noise, ties, zeros, one bucket
// holding everything, values spread over the whole float range, subnormals, every size 1..600.
#include "dsp/median_abs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace vigil {
namespace {

float reference(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(mid), v.end());
  const float upper = v[mid];
  if (v.size() % 2) return upper;
  return 0.5f * (*std::max_element(v.begin(), v.begin() + ptrdiff_t(mid)) + upper);
}

TEST(MedianAbs, EqualsTheSortedMedianExactly) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> small(-3, 3), exponent(-149, 127);
  MedianAbs median(5000);
  auto check = [&](const std::vector<float>& v, const std::string& what) {
    ASSERT_EQ(median(v.data(), v.size()), reference(v)) << what << ", n " << v.size();
  };
  for (size_t n = 1; n <= 600; ++n) {
    std::vector<float> noise(n), ties(n), spread(n), one_bucket(n);
    for (size_t i = 0; i < n; ++i) {
      noise[i] = normal(rng) * 1e-3f;
      ties[i] = float(small(rng));  // many equal values, zeros and sign changes
      spread[i] = std::ldexp(1.0f + std::fabs(normal(rng)), exponent(rng)) * (i % 2 ? -1.0f : 1.0f);
      one_bucket[i] = 1.0f + float(i % 7) * 1e-7f;  // all within one bucket's bits
    }
    check(noise, "noise");
    check(ties, "ties");
    check(spread, "whole range");
    check(one_bucket, "one bucket");
  }
  std::vector<float> big(5000);
  for (float& x : big) x = normal(rng);
  check(big, "5000 normal");
  check({std::numeric_limits<float>::denorm_min(), 0.0f, -0.0f, 1e-40f}, "subnormals and signed zeros");
  check({std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 3.0f}, "largest");
  check({std::numeric_limits<float>::infinity(), 1.0f}, "an infinity");
}

}  // namespace
}  // namespace vigil
