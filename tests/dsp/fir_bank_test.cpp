#include "dsp/fir_bank.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

TEST(FirBank, MatchesScipyLfilterReference) {
  const auto h64 = test::read_f64("fir63_h.bin");
  const auto x64 = test::read_f64("input_x.bin");
  const auto y64 = test::read_f64("fir63_lfilter_y.bin");
  const std::vector<float> h(h64.begin(), h64.end()), x(x64.begin(), x64.end());
  FirBank bank({h}, 1, uint32_t(x.size()));
  std::vector<float> y(x.size(), -999.0f);
  bank.process(x.data(), x.size(), uint32_t(x.size()), y.data(), y.size());
  double max_ref = 0;
  for (double v : y64) max_ref = std::max(max_ref, std::fabs(v));
  const double tol = test::kFirOutputRel * std::max(1.0, max_ref);
  for (size_t n = 0; n < y.size(); ++n) ASSERT_NEAR(y[n], y64[n], tol) << "sample " << n;
}

TEST(FirBank, StreamingInRandomChunksEqualsOneCall) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  const uint32_t channels = 3, total = 20000;
  std::vector<std::vector<float>> taps = {std::vector<float>(255), std::vector<float>(17), std::vector<float>(1)};
  for (auto& t : taps) for (auto& v : t) v = nd(rng);
  std::vector<float> x(size_t(channels) * total);
  for (auto& v : x) v = nd(rng);

  FirBank whole(taps, channels, total);
  std::vector<float> y_whole(size_t(3) * channels * total);
  whole.process(x.data(), total, total, y_whole.data(), total);

  const uint32_t max_chunk = 777;
  FirBank streamed(taps, channels, max_chunk);
  std::vector<float> in(size_t(channels) * max_chunk), out(size_t(3) * channels * max_chunk);
  std::uniform_int_distribution<uint32_t> size_dist(0, max_chunk);
  for (uint32_t at = 0; at < total;) {
    const uint32_t n = std::min(size_dist(rng), total - at);
    for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * max_chunk]);
    std::fill(out.begin(), out.end(), -999.0f);
    streamed.process(in.data(), max_chunk, n, out.data(), max_chunk);
    for (uint32_t lane = 0; lane < 3 * channels; ++lane)
      for (uint32_t i = 0; i < n; ++i)
        ASSERT_EQ(out[size_t(lane) * max_chunk + i], y_whole[size_t(lane) * total + at + i])
            << "lane " << lane << " sample " << at + i;
    at += n;
  }
}

// prime() leaves the bank as process() would have: the outputs after it are the same to the bit,
// whether it was fed more frames than the history holds or fewer (then it shifts), and a pending
// crossfade advances with it (the last case ends with one still under way).
TEST(FirBank, PrimeLeavesTheStateProcessWouldHave) {
  std::mt19937 rng(8);
  std::normal_distribution<float> nd;
  const uint32_t channels = 2, max_frames = 300;
  std::vector<std::vector<float>> taps = {std::vector<float>(129), std::vector<float>(40)};
  std::vector<std::vector<float>> next = {std::vector<float>(100), std::vector<float>(129)};
  for (auto* set : {&taps, &next})
    for (auto& t : *set) for (auto& v : t) v = nd(rng);
  for (const std::vector<uint32_t>& feeds :
       {std::vector<uint32_t>{1000}, std::vector<uint32_t>{50, 7, 300, 1, 99}, std::vector<uint32_t>{30, 20}}) {
    FirBank processed(taps, channels, max_frames), primed(taps, channels, max_frames);
    processed.set_taps(next, 200);
    primed.set_taps(next, 200);
    std::vector<float> scratch(size_t(2) * channels * max_frames);
    for (uint32_t n : feeds) {
      std::vector<float> x(size_t(channels) * n);
      for (auto& v : x) v = nd(rng);
      for (uint32_t at = 0; at < n;) {  // process() takes at most max_frames a call
        const uint32_t k = std::min(max_frames, n - at);
        std::vector<float> part(size_t(channels) * k);
        for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * n + at], k, &part[size_t(c) * k]);
        processed.process(part.data(), k, k, scratch.data(), max_frames);
        at += k;
      }
      primed.prime(x.data(), n, n);
    }
    std::vector<float> x(size_t(channels) * max_frames), a(scratch.size(), 1.0f), b(scratch.size(), -1.0f);
    for (auto& v : x) v = nd(rng);
    processed.process(x.data(), max_frames, max_frames, a.data(), max_frames);
    primed.process(x.data(), max_frames, max_frames, b.data(), max_frames);
    EXPECT_EQ(a, b) << "after feeds of " << feeds.size();
    EXPECT_EQ(processed.crossfade_pending(), primed.crossfade_pending());
  }
}

TEST(FirBank, ImpulseGivesTapsAndResetForgetsHistory) {
  const std::vector<float> taps = {0.5f, -0.25f, 0.125f, 2.0f};
  FirBank bank({taps}, 1, 8);
  std::vector<float> x = {1, 0, 0, 0, 0, 0, 0, 0}, y(8);
  bank.process(x.data(), 8, 8, y.data(), 8);
  EXPECT_EQ(y, (std::vector<float>{0.5f, -0.25f, 0.125f, 2.0f, 0, 0, 0, 0}));
  // An impulse at the very end: its tail continues into the next call...
  std::vector<float> tail = {0, 0, 0, 0, 0, 0, 0, 1};
  bank.process(tail.data(), 8, 8, y.data(), 8);
  std::vector<float> zeros(8, 0.0f);
  bank.process(zeros.data(), 8, 3, y.data(), 8);
  EXPECT_EQ(y[0], -0.25f);
  EXPECT_EQ(y[2], 2.0f);
  // ...unless reset() drops it.
  bank.process(tail.data(), 8, 8, y.data(), 8);
  bank.reset();
  bank.process(zeros.data(), 8, 3, y.data(), 8);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
}

TEST(FirBank, RejectsBadParameters) {
  EXPECT_THROW(FirBank({}, 1, 8), std::invalid_argument);
  EXPECT_THROW(FirBank({{}}, 1, 8), std::invalid_argument);
  EXPECT_THROW(FirBank({{1.0f}}, 0, 8), std::invalid_argument);
  EXPECT_THROW(FirBank({{1.0f}}, 1, 0), std::invalid_argument);
  EXPECT_THROW(FirBank({std::vector<float>(65537, 0.0f)}, 1, 8), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
