// The row sums against the plain loop they replace, to the bit: every length's blocks of
// accumulators, single vectors and scalar tail, the portable and (where the CPU has AVX2) the
// 8-wide build.
#include "dsp/row_sums.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../support/signals.hpp"

namespace vigil {
namespace {

using test::randn;

// out[i] = sum_t w[t] * rows[t][i], one product and one add at a time in tap order.
std::vector<float> reference(const std::vector<float>& w, const std::vector<const float*>& rows, size_t n) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    float a = 0.0f;
    for (size_t t = 0; t < w.size(); ++t) a += w[t] * rows[t][i];
    out[i] = a;
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp may not take the null data() of an empty vector (UBSan), even for no bytes.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

const std::vector<size_t> kLengths = {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129, 1000, 2048};
const std::vector<size_t> kTaps = {1, 2, 9, 16, 255};

TEST(RowSums, SlidingRowsEqualThePlainLoopToTheBit) {
  uint32_t seed = std::random_device{}();
  for (size_t taps : kTaps) {
    for (size_t n : kLengths) {
      const std::vector<float> w = randn(taps, ++seed), x = randn(n + taps, ++seed);
      std::vector<const float*> rows;
      for (size_t t = 0; t < taps; ++t) rows.push_back(x.data() + t);
      const std::vector<float> want = reference(w, rows, n);
      std::vector<float> got(n, -999.0f), portable(n, -999.0f);
      row_sums::sliding(w.data(), x.data(), taps, n, got.data());
      row_sums::sliding_portable(w.data(), x.data(), taps, n, portable.data());
      const std::string what = "taps " + std::to_string(taps) + " n " + std::to_string(n) + " seed " + std::to_string(seed);
      EXPECT_TRUE(same_bits(got, want)) << what << (row_sums::wide() ? " (8 wide)" : "");
      EXPECT_TRUE(same_bits(portable, want)) << what << " (portable)";
    }
  }
}

TEST(RowSums, RowsByPointerOneAndTwoWeightingsEqualThePlainLoopToTheBit) {
  uint32_t seed = std::random_device{}();
  for (size_t taps : kTaps) {
    for (size_t n : kLengths) {
      // Rows at unrelated, unaligned places of one buffer.
      const std::vector<float> w1 = randn(taps, ++seed), w2 = randn(taps, ++seed), x = randn(taps * (n + 3) + 1, ++seed);
      std::vector<const float*> rows;
      for (size_t t = 0; t < taps; ++t) rows.push_back(x.data() + 1 + ((t * 7919) % taps) * (n + 3) + t % 3);
      const std::vector<float> want1 = reference(w1, rows, n), want2 = reference(w2, rows, n);
      std::vector<float> one(n, -999.0f), a(n, -999.0f), b(n, -999.0f);
      row_sums::sum(w1.data(), rows.data(), taps, n, one.data());
      row_sums::sum2(w1.data(), w2.data(), rows.data(), taps, n, a.data(), b.data());
      const std::string what = "taps " + std::to_string(taps) + " n " + std::to_string(n) + " seed " + std::to_string(seed);
      EXPECT_TRUE(same_bits(one, want1)) << what;
      EXPECT_TRUE(same_bits(a, want1)) << what;
      EXPECT_TRUE(same_bits(b, want2)) << what;
      std::fill(one.begin(), one.end(), -999.0f);
      std::fill(a.begin(), a.end(), -999.0f);
      std::fill(b.begin(), b.end(), -999.0f);
      row_sums::sum_portable(w1.data(), rows.data(), taps, n, one.data());
      row_sums::sum2_portable(w1.data(), w2.data(), rows.data(), taps, n, a.data(), b.data());
      EXPECT_TRUE(same_bits(one, want1)) << what << " (portable)";
      EXPECT_TRUE(same_bits(a, want1)) << what << " (portable)";
      EXPECT_TRUE(same_bits(b, want2)) << what << " (portable)";
    }
  }
}

// Which build ran above: on x86-64 with AVX2 the 8-wide one (this machine and the CI's have it).
TEST(RowSums, SaysWhichBuildItRuns) {
#if defined(__x86_64__)
  EXPECT_EQ(row_sums::wide(), bool(__builtin_cpu_supports("avx2")));
#else
  EXPECT_FALSE(row_sums::wide());
#endif
}

}  // namespace
}  // namespace vigil
