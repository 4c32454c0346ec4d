// Partitioned overlap-save against the direct form (the specification) and SciPy's lfilter.
#include "dsp/partitioned_fir_bank.hpp"

#include <gtest/gtest.h>

#include "../support/signals.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"
#include "core/block_worker.hpp"
#include "dsp/fir_bank.hpp"

namespace vigil {
namespace {

using test::max_abs;
using test::randn;
using test::rel_l2;



TEST(PartitionedFirBank, MatchesScipyLfilterDelayedByOnePartition) {
  const auto h64 = test::read_f64("fir63_h.bin");
  const auto x64 = test::read_f64("input_x.bin");
  const auto y64 = test::read_f64("fir63_lfilter_y.bin");
  const std::vector<float> h(h64.begin(), h64.end()), x(x64.begin(), x64.end());
  for (uint32_t block : {16u, 64u, 256u}) {
    PartitionedFirBank bank({h}, 1, PartitionedFirBank::uniform(block));
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
// Both block phasings: staggered channels give the same output (their first block is short).
TEST(PartitionedFirBank, EqualsDirectFormForEveryLengthAndChunking) {
  for (BlockPhases phases : {BlockPhases::kAligned, BlockPhases::kStaggered})
    for (uint32_t channels : {1u, 3u, 7u}) {
      SCOPED_TRACE(std::string(phases == BlockPhases::kAligned ? "aligned" : "staggered") + ", " +
                   std::to_string(channels) + " channels");
  const uint32_t block = 64, total = 6000;
  std::mt19937 rng(21);
  for (size_t len : {size_t(1), size_t(block - 1), size_t(block), size_t(block + 1), size_t(1000), size_t(8192)}) {
    std::vector<std::vector<float>> taps = {randn(len, uint32_t(len)), randn(std::max<size_t>(1, len / 3), 7)};
    for (auto& t : taps)
      for (auto& v : t) v /= std::sqrt(float(t.size()));
    const std::vector<float> x = randn(size_t(channels) * total, 99);
    FirBank direct(taps, channels, total);
    std::vector<float> ref(2 * size_t(channels) * total);
    direct.process(x.data(), total, total, ref.data(), total);

    PartitionedFirBank bank(taps, channels, PartitionedFirBank::uniform(block), FftPlanning::kEstimate, phases);
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
      for (uint32_t i = 0; i < block; ++i)  // staggered: a short first block's FFTs leave rounding noise
        if (phases == BlockPhases::kAligned)
          ASSERT_EQ(got[size_t(lane) * total + i], 0.0f);
        else
          ASSERT_NEAR(got[size_t(lane) * total + i], 0.0f, tol);
      for (uint32_t i = block; i < total; ++i)
        ASSERT_NEAR(got[size_t(lane) * total + i], ref[size_t(lane) * total + i - block], tol)
            << "taps " << len << " lane " << lane << " sample " << i;
    }
  }
    }
}

TEST(PartitionedFirBank, SingleBlockLayoutEqualsDirectForm) {
  const uint32_t channels = 2, total = 5000;
  for (BlockPhases phases : {BlockPhases::kAligned, BlockPhases::kStaggered})
  for (size_t len : {size_t(1), size_t(63), size_t(500), size_t(2000)}) {
    const std::vector<std::vector<float>> taps = {randn(len, 3)};
    const std::vector<float> x = randn(size_t(channels) * total, 4);
    FirBank direct(taps, channels, total);
    std::vector<float> ref(size_t(channels) * total), got(size_t(channels) * total, -999.0f);
    direct.process(x.data(), total, total, ref.data(), total);
    const uint32_t n = PartitionedFirBank::best_fft_size(len);
    PartitionedFirBank bank(taps, channels, PartitionedFirBank::single_block(len, n), FftPlanning::kEstimate, phases);
    EXPECT_EQ(bank.partitions(), 1u);
    EXPECT_EQ(bank.latency_frames(), n - len + 1);
    for (uint32_t at = 0; at < total; at += 999) {
      const uint32_t k = std::min(999u, total - at);
      std::vector<float> in(size_t(channels) * k), out(size_t(channels) * k);
      for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], k, &in[size_t(c) * k]);
      bank.process(in.data(), k, k, out.data(), k);
      for (uint32_t c = 0; c < channels; ++c) std::copy_n(&out[size_t(c) * k], k, &got[size_t(c) * total + at]);
    }
    const uint32_t lat = bank.latency_frames();
    const double tol = test::kFirOutputRel * std::max(1.0, max_abs(ref));
    for (uint32_t c = 0; c < channels; ++c)
      for (uint32_t i = lat; i < total; ++i)
        ASSERT_NEAR(got[size_t(c) * total + i], ref[size_t(c) * total + i - lat], tol) << "taps " << len << " i " << i;
  }
}

TEST(PartitionedFirBank, BestFftSizeMinimisesWorkPerSample) {
  // N log N / (N - M + 1): for 64 taps the optimum is well above the textbook 2M.
  const uint32_t n64 = PartitionedFirBank::best_fft_size(64);
  EXPECT_GE(n64, 512u);
  EXPECT_LE(n64, 4096u);
  EXPECT_GT(PartitionedFirBank::best_fft_size(8192), 8192u * 2);
  EXPECT_EQ(PartitionedFirBank::best_fft_size(8192, 1024), 0u);  // no single block of <= 1024 fits
  EXPECT_EQ(PartitionedFirBank::best_fft_size(100, 1024), 1024u);  // capped: hop 925
}

TEST(PartitionedFirBank, TapSwapCrossfadesWithoutAClick) {
  // Old filter: gain 1 (impulse); new filter: gain -0.5. During the crossfade block the output must
  // lie between the two filters' outputs; before it equal the old, after it the new.
  const uint32_t block = 32, total = 1024;
  const std::vector<float> x = randn(total, 5);
  PartitionedFirBank bank({{1.0f}}, 1, PartitionedFirBank::uniform(block));
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
      ASSERT_NEAR(y[n], old_y, test::kFloatSampleAbs) << n;
    } else if (n >= 448) {
      ASSERT_NEAR(y[n], new_y, test::kFloatSampleAbs) << n;
    } else {
      ASSERT_GE(y[n], std::min(old_y, new_y) - 1e-5f) << n;
      ASSERT_LE(y[n], std::max(old_y, new_y) + 1e-5f) << n;
    }
  }
  EXPECT_NEAR(y[447], -0.5f * x[447 - block], test::kFloatSampleAbs);  // fully new on the crossfade's last sample
}

// Staggered phases spread the blocks: with chunks of B / C frames every call runs exactly one
// channel's block (aligned: all C in one call of every C, none in the others).
TEST(PartitionedFirBank, StaggeredChannelsShareEveryChunksWork) {
  const uint32_t block = 256, channels = 8, chunk = block / channels;
  const std::vector<std::vector<float>> taps = {randn(1000, 1), randn(300, 2)};
  const std::vector<float> x = randn(size_t(channels) * chunk, 3);
  std::vector<float> y(2 * size_t(channels) * chunk);
  for (BlockPhases phases : {BlockPhases::kAligned, BlockPhases::kStaggered}) {
    PartitionedFirBank bank(taps, channels, PartitionedFirBank::uniform(block), FftPlanning::kEstimate, phases);
    for (uint32_t call = 0; call < 4 * channels; ++call) {
      const uint64_t before = bank.channel_blocks();
      bank.process(x.data(), chunk, chunk, y.data(), chunk);
      const uint64_t ran = bank.channel_blocks() - before;
      if (phases == BlockPhases::kStaggered)
        ASSERT_EQ(ran, 1u) << "call " << call;
      else
        ASSERT_EQ(ran, call % channels == channels - 1 ? channels : 0u) << "call " << call;
    }
  }
}

// Staggered tap swap: each channel crossfades over its own block after set_taps and is on the new
// filter after it; taps staged while some channels are still crossing over follow once all have,
// each channel starting at its first boundary after the last one crossed. The same however the
// stream is chunked.
TEST(PartitionedFirBank, StaggeredTapSwapCrossfadesEachChannelAtItsOwnBlock) {
  const uint32_t block = 128, channels = 4, total = 4096;
  const std::vector<float> x = randn(size_t(channels) * total, 8);
  // Channel c's blocks end (exclusive index) where n % B == c * B / C (G = C phase groups here).
  auto first_end_after = [&](uint32_t c, uint32_t n) {
    uint32_t e = c == 0 ? block : c * block / channels;
    while (e <= n) e += block;
    return e;
  };
  // First swap staged at 1000: blocks end at 1024 (c0), 1056 (c1), 1088 (c2), 1120 (c3). Second
  // staged at 1060: c0 and c1 have crossed, c2 and c3 not: queued until c3 crosses at 1120.
  uint32_t last_cross = 0;
  for (uint32_t c = 0; c < channels; ++c) last_cross = std::max(last_cross, first_end_after(c, 1000));
  ASSERT_EQ(last_cross, 1120u);
  for (uint32_t max_chunk : {7u, 100u, 1000u}) {
    PartitionedFirBank bank({{1.0f}}, channels, PartitionedFirBank::uniform(block), FftPlanning::kEstimate,
                            BlockPhases::kStaggered);
    std::vector<float> y(size_t(channels) * total, -999.0f);
    auto run = [&](uint32_t from, uint32_t to) {
      for (uint32_t at = from; at < to;) {
        const uint32_t k = std::min(max_chunk, to - at);
        bank.process(x.data() + at, total, k, y.data() + at, total);
        at += k;
      }
    };
    run(0, 1000);
    bank.set_taps({{-0.5f}});
    run(1000, 1060);
    bank.set_taps({{0.25f}});
    EXPECT_TRUE(bank.crossfade_pending());
    run(1060, total);
    EXPECT_FALSE(bank.crossfade_pending());
    for (uint32_t c = 0; c < channels; ++c) {
      const uint32_t fade1 = first_end_after(c, 1000);  // the block ending here crossfades to -0.5
      const uint32_t fade2 = c == 3 ? fade1 + block : first_end_after(c, last_cross);  // then to 0.25
      const float* yc = y.data() + size_t(c) * total;
      const float* xc = x.data() + size_t(c) * total;
      for (uint32_t n = block; n < total; ++n) {
        // Output n is the filter on x[n - B]; a crossfading block ending at e is output e .. e + B - 1.
        const float in = xc[n - block];
        float g0 = 1.0f, g1 = 1.0f;
        if (n >= fade1 + block) g0 = g1 = -0.5f;
        else if (n >= fade1) g0 = 1.0f, g1 = -0.5f;
        if (n >= fade2 + block) g0 = g1 = 0.25f;
        else if (n >= fade2) g0 = -0.5f, g1 = 0.25f;
        const float a = g0 * in, b = g1 * in;
        ASSERT_GE(yc[n], std::min(a, b) - 1e-5f) << "chunks of " << max_chunk << ", channel " << c << ", n " << n;
        ASSERT_LE(yc[n], std::max(a, b) + 1e-5f) << "chunks of " << max_chunk << ", channel " << c << ", n " << n;
      }
      EXPECT_NEAR(yc[fade1 + block - 1], -0.5f * xc[fade1 - 1], test::kFloatSampleAbs) << c;  // all new at each fade's end
      EXPECT_NEAR(yc[fade2 + block - 1], 0.25f * xc[fade2 - 1], test::kFloatSampleAbs) << c;
      EXPECT_NEAR(yc[fade1 - 1], xc[fade1 - 1 - block], test::kFloatSampleAbs) << c;           // all old just before
    }
  }
}

// Deferred blocks: the output is y[n - B - defer], whether a BlockWorker runs the blocks on its
// thread or process() runs them itself; the two are the same to the bit, through tap swaps (the
// crossfade's state lives on the worker's side) and a reset, in random chunks, every phase.
TEST(PartitionedFirBank, DeferredBlocksComeDeferLaterOnTheWorkerOrNot) {
  const uint32_t block = 64, channels = 3, total = 6000, max_chunk = 150;
  std::vector<std::vector<float>> taps = {randn(300, 31), randn(40, 32)};
  for (auto& t : taps)
    for (auto& v : t) v /= std::sqrt(float(t.size()));
  const std::vector<std::vector<float>> swapped = {randn(200, 33), randn(64, 34)};
  const std::vector<float> x = randn(size_t(channels) * total, 35);
  FirBank direct(taps, channels, total);
  std::vector<float> ref(2 * size_t(channels) * total);
  direct.process(x.data(), total, total, ref.data(), total);
  const double tol = test::kFirOutputRel * std::max(1.0, max_abs(ref));
  BlockWorker worker("vigil-bw-test", 2);  // room for two jobs: submit() waits for room too
  for (BlockPhases phases : {BlockPhases::kAligned, BlockPhases::kStaggered})
    for (uint32_t defer : {1u, 37u, block / 2, block}) {
      SCOPED_TRACE(std::string(phases == BlockPhases::kAligned ? "aligned" : "staggered") + ", defer " +
                   std::to_string(defer));
      PartitionedFirBank inline_bank(taps, channels, PartitionedFirBank::uniform(block), FftPlanning::kEstimate,
                                     phases, 0, defer);
      PartitionedFirBank worker_bank(taps, channels, PartitionedFirBank::uniform(block), FftPlanning::kEstimate,
                                     phases, 0, defer, &worker);
      EXPECT_EQ(worker_bank.latency_frames(), block + defer);
      std::mt19937 rng(defer);
      std::uniform_int_distribution<uint32_t> size_dist(0, max_chunk);
      std::vector<float> in(size_t(channels) * max_chunk), a(2 * size_t(channels) * max_chunk),
          b(2 * size_t(channels) * max_chunk);
      std::vector<float> got(2 * size_t(channels) * total, -999.0f);
      for (int pass = 0; pass < 2; ++pass) {  // the second after a reset, with two tap swaps
        for (uint32_t at = 0; at < total;) {
          if (pass == 1 && at >= 2000 && at < 2000 + max_chunk) {
            inline_bank.set_taps(swapped);
            worker_bank.set_taps(swapped);
          }
          if (pass == 1 && at >= 2100 && at < 2100 + max_chunk) {
            inline_bank.set_taps(taps);
            worker_bank.set_taps(taps);
          }
          const uint32_t n = std::min(size_dist(rng), total - at);
          for (uint32_t c = 0; c < channels; ++c)
            std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * max_chunk]);
          std::fill(a.begin(), a.end(), std::nanf(""));
          std::fill(b.begin(), b.end(), std::nanf(""));
          inline_bank.process(in.data(), max_chunk, n, a.data(), max_chunk);
          worker_bank.process(in.data(), max_chunk, n, b.data(), max_chunk);
          for (uint32_t lane = 0; lane < 2 * channels; ++lane) {
            for (uint32_t i = 0; i < n; ++i)
              ASSERT_EQ(a[size_t(lane) * max_chunk + i], b[size_t(lane) * max_chunk + i])
                  << "pass " << pass << " lane " << lane << " sample " << at + i;
            std::copy_n(&b[size_t(lane) * max_chunk], n, &got[size_t(lane) * total + at]);
          }
          at += n;
        }
        if (pass == 1) {
          EXPECT_FALSE(worker_bank.crossfade_pending());
          break;
        }
        const uint32_t lat = block + defer;
        for (uint32_t lane = 0; lane < 2 * channels; ++lane) {
          for (uint32_t i = 0; i < lat; ++i) ASSERT_NEAR(got[size_t(lane) * total + i], 0.0f, tol) << i;
          for (uint32_t i = lat; i < total; ++i)
            ASSERT_NEAR(got[size_t(lane) * total + i], ref[size_t(lane) * total + i - lat], tol)
                << "lane " << lane << " sample " << i;
        }
        inline_bank.reset();
        worker_bank.reset();
      }
      // After the swaps back to the first taps, the tail is the first filter again.
      for (uint32_t lane = 0; lane < 2 * channels; ++lane)
        for (uint32_t i = 3000; i < total; ++i)
          ASSERT_NEAR(got[size_t(lane) * total + i], ref[size_t(lane) * total + i - block - defer], tol)
              << "after the swaps, lane " << lane << " sample " << i;
      EXPECT_GT(worker_bank.channel_blocks(), 0u);
      EXPECT_EQ(worker_bank.channel_blocks(), inline_bank.channel_blocks());
    }
}

TEST(PartitionedFirBank, ResetForgetsHistory) {
  PartitionedFirBank bank({randn(100, 1)}, 1, PartitionedFirBank::uniform(16));
  std::vector<float> x = randn(200, 2), y(200);
  bank.process(x.data(), 200, 200, y.data(), 200);
  bank.reset();
  std::vector<float> zeros(200, 0.0f);
  bank.process(zeros.data(), 200, 200, y.data(), 200);
  EXPECT_EQ(max_abs(y), 0.0);
}

TEST(PartitionedFirBank, RejectsBadParameters) {
  const auto u16 = PartitionedFirBank::uniform(16);
  EXPECT_THROW(PartitionedFirBank::uniform(48), std::invalid_argument);   // not a power of two
  EXPECT_THROW(PartitionedFirBank::uniform(8), std::invalid_argument);    // too small
  EXPECT_THROW(PartitionedFirBank::single_block(64, 64), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({}, 1, u16), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({{}}, 1, u16), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 0, u16), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 1, PartitionLayout{16, 16, 24}), std::invalid_argument);  // N not 2^k
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 1, PartitionLayout{20, 20, 32}), std::invalid_argument);  // N < L+B-1
  // Longer than one partition with L != B: the delay line cannot line up.
  EXPECT_THROW(PartitionedFirBank({std::vector<float>(40, 0.1f)}, 1, PartitionLayout{8, 16, 32}), std::invalid_argument);
  EXPECT_THROW(PartitionedFirBank({{1.0f}}, 1, u16, FftPlanning::kEstimate, BlockPhases::kAligned, 0, 17),
               std::invalid_argument);  // deferred by more than a block
  PartitionedFirBank bank({std::vector<float>(40, 0.1f)}, 1, u16);  // 3 partitions
  EXPECT_THROW(bank.set_taps({std::vector<float>(49, 0.1f)}), std::invalid_argument);  // 4 partitions
  EXPECT_THROW(bank.set_taps({{1.0f}, {1.0f}}), std::invalid_argument);
  EXPECT_NO_THROW(bank.set_taps({std::vector<float>(48, 0.1f)}));
}

}  // namespace
}  // namespace vigil
