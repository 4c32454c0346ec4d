// Partitioned overlap-save against the direct form (the specification) and SciPy's lfilter.
#include "dsp/partitioned_fir_bank.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"
#include "dsp/fir_bank.hpp"

namespace vigil {
namespace {

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

TEST(PartitionedFirBank, MatchesScipyLfilterDelayedByOnePartition) {
  const auto h64 = test::read_f64("fir63_h.bin");
  const auto x64 = test::read_f64("input_x.bin");
  const auto y64 = test::read_f64("fir63_lfilter_y.bin");
  const std::vector<float> h(h64.begin(), h64.end()), x(x64.begin(), x64.end());
  for (uint32_t block : {16u, 64u, 256u}) {
    PartitionedFirBank bank({h}, 1, block);
    EXPECT_EQ(bank.latency_frames(), block);
    std::vector<float> y(x.size(), -999.0f);
    bank.process(x.data(), x.size(), uint32_t(x.size()), y.data(), y.size());
    double max_ref = 0;
    for (double v : y64) max_ref = std::max(max_ref, std::fabs(v));
    const double tol = test::kFirOutputRel * std::max(1.0, max_ref);
    for (size_t n = 0; n < block; ++n) ASSERT_EQ(y[n], 0.0f) << "block " << block << " sample " << n;
    for (size_t n = block; n < y.size(); ++n)
      ASSERT_NEAR(y[n], y64[n - block], tol) << "block " << block << " sample " << n;
  }
}

// Every interesting filter length against the direct form, several bands at once, fed in random
// chunk sizes (including 0 and chunks larger than a block).
TEST(PartitionedFirBank, EqualsDirectFormForEveryLengthAndChunking) {
  const uint32_t block = 64, channels = 3, total = 6000;
  std::mt19937 rng(21);
  for (size_t len : {size_t(1), size_t(block - 1), size_t(block), size_t(block + 1), size_t(1000), size_t(8192)}) {
    std::vector<std::vector<float>> taps = {randn(len, uint32_t(len)), randn(std::max<size_t>(1, len / 3), 7)};
    for (auto& t : taps)
      for (auto& v : t) v /= std::sqrt(float(t.size()));
    const std::vector<float> x = randn(size_t(channels) * total, 99);
    FirBank direct(taps, channels, total);
    std::vector<float> ref(2 * size_t(channels) * total);
    direct.process(x.data(), total, total, ref.data(), total);

    PartitionedFirBank bank(taps, channels, block);
    const uint32_t max_chunk = 300;
    std::vector<float> in(size_t(channels) * max_chunk), out(2 * size_t(channels) * max_chunk);
    std::vector<float> got(2 * size_t(channels) * total, -999.0f);
    std::uniform_int_distribution<uint32_t> size_dist(0, max_chunk);
    for (uint32_t at = 0; at < total;) {
      const uint32_t n = std::min(size_dist(rng), total - at);
      for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * max_chunk]);
      bank.process(in.data(), max_chunk, n, out.data(), max_chunk);
      for (uint32_t lane = 0; lane < 2 * channels; ++lane)
        std::copy_n(&out[size_t(lane) * max_chunk], n, &got[size_t(lane) * total + at]);
      at += n;
    }
    const double tol = test::kFirOutputRel * std::max(1.0, max_abs(ref));
    for (uint32_t lane = 0; lane < 2 * channels; ++lane) {
      for (uint32_t i = 0; i < block; ++i) ASSERT_EQ(got[size_t(lane) * total + i], 0.0f);
      for (uint32_t i = block; i < total; ++i)
        ASSERT_NEAR(got[size_t(lane) * total + i], ref[size_t(lane) * total + i - block], tol)
            << "taps " << len << " lane " << lane << " sample " << i;
    }
  }
}

TEST(PartitionedFirBank, TapSwapCrossfadesWithoutAClick) {
  // Old filter: gain 1 (impulse); new filter: gain -0.5. During the crossfade block the output must
  // lie between the two filters' outputs; before it equal the old, after it the new.
  const uint32_t block = 32, total = 1024;
  const std::vector<float> x = randn(total, 5);
  PartitionedFirBank bank({{1.0f}}, 1, block);
  std::vector<float> y(total);
  bank.process(x.data(), total, 400, y.data(), total);  // swap is staged mid-block (400 = 12.5 blocks)
  bank.set_taps({{-0.5f}});
  EXPECT_TRUE(bank.crossfade_pending());
  bank.process(x.data() + 400, total, total - 400, y.data() + 400, total);
  EXPECT_FALSE(bank.crossfade_pending());
  // Block 12 (samples 384..415 of input) is the first processed after set_taps: its output
  // appears at 416..447 (one block of latency) and is the crossfade.
  for (uint32_t n = block; n < total; ++n) {
    const float old_y = x[n - block], new_y = -0.5f * x[n - block];
    if (n < 416) {
      ASSERT_NEAR(y[n], old_y, 1e-5) << n;
    } else if (n >= 448) {
      ASSERT_NEAR(y[n], new_y, 1e-5) << n;
    } else {
      ASSERT_GE(y[n], std::min(old_y, new_y) - 1e-5f) << n;
      ASSERT_LE(y[n], std::max(old_y, new_y) + 1e-5f) << n;
    }
  }
  EXPECT_NEAR(y[447], -0.5f * x[447 - block], 1e-5);  // fully new on the crossfade's last sample
}

TEST(PartitionedFirBank, ResetForgetsHistory) {
  PartitionedFirBank bank({randn(100, 1)}, 1, 16);
  std::vector<float> x = randn(200, 2), y(200);
  bank.process(x.data(), 200, 200, y.data(), 200);
  bank.reset();
  std::vector<float> zeros(200, 0.0f);
  bank.process(zeros.data(), 200, 200, y.data(), 200);
  EXPECT_EQ(max_abs(y), 0.0);
}

TEST(PartitionedFirBank, RejectsBadParameters) {
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 1, 48), std::invalid_argument);   // not a power of two
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 1, 8), std::invalid_argument);    // too small
  EXPECT_THROW(PartitionedFirBank({}, 1, 16), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({{}}, 1, 16), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 0, 16), std::invalid_argument);
  PartitionedFirBank bank({std::vector<float>(40, 0.1f)}, 1, 16);  // 3 partitions
  EXPECT_THROW(bank.set_taps({std::vector<float>(49, 0.1f)}), std::invalid_argument);  // 4 partitions
  EXPECT_THROW(bank.set_taps({{1.0f}, {1.0f}}), std::invalid_argument);
  EXPECT_NO_THROW(bank.set_taps({std::vector<float>(48, 0.1f)}));
}

}  // namespace
}  // namespace vigil
