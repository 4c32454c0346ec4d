// Non-uniform partitions against a float64 direct convolution (the specification), the planner's
// choices, tap swaps, and what the constructor refuses.
#include "dsp/nonuniform_fir_bank.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"
#include "core/block_worker.hpp"
#include "dsp/streaming_fir_bank.hpp"
#include "core/worker_pool.hpp"

namespace vigil {
namespace {

using test::max_abs;
using test::randn;

// y[n] = sum_j h[j] x[n - j] in float64, taps from `first` to `end` only (the rest taken as 0).
std::vector<float> convolve(const std::vector<float>& h, const float* x, size_t n, size_t first = 0,
                            size_t end = SIZE_MAX) {
  end = std::min(end, h.size());
  std::vector<float> y(n);
  for (size_t i = 0; i < n; ++i) {
    double acc = 0;
    for (size_t j = first; j < end && j <= i; ++j) acc += double(h[j]) * x[i - j];
    y[i] = float(acc);
  }
  return y;
}

std::vector<std::vector<float>> normalised_taps(std::vector<size_t> lengths, uint32_t seed) {
  std::vector<std::vector<float>> taps;
  for (size_t len : lengths) {
    taps.push_back(randn(len, seed++));
    for (float& v : taps.back()) v /= std::sqrt(float(len));
  }
  return taps;
}

FirLevel uniform(uint32_t block, uint32_t partitions) { return {PartitionedFirBank::uniform(block), partitions}; }

// Feeds x (channels x total, channel-major) in chunks drawn from `chunks` (cycled) and returns
// every band's output laid out as [band][channel][total]; the chunk's output is poisoned first.
std::vector<float> run_chunked(NonUniformFirBank& bank, const std::vector<float>& x, uint32_t channels,
                               uint32_t bands, uint32_t total, const std::vector<uint32_t>& chunks) {
  const uint32_t max_chunk = *std::max_element(chunks.begin(), chunks.end());
  std::vector<float> in(size_t(channels) * max_chunk), out(size_t(bands) * channels * max_chunk);
  std::vector<float> got(size_t(bands) * channels * total, -999.0f);
  size_t turn = 0;
  for (uint32_t at = 0; at < total;) {
    const uint32_t n = std::min(chunks[turn++ % chunks.size()], total - at);
    for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * max_chunk]);
    std::fill(out.begin(), out.end(), std::nanf(""));
    bank.process(in.data(), max_chunk, n, out.data(), max_chunk);
    for (uint32_t lane = 0; lane < bands * channels; ++lane)
      std::copy_n(&out[size_t(lane) * max_chunk], n, &got[size_t(lane) * total + at]);
    at += n;
  }
  return got;
}

TEST(NonUniformFirBank, PlansGrowingLevelsOnlyWhereTheyPay) {
  // S3's crossover: 4 bands x 8191 taps at 256 frames.
  const std::vector<FirLevel> s3 = NonUniformFirBank::plan(8191, 256, 4);
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_EQ(s3[0].layout.block, 256u);
  EXPECT_EQ(s3[0].partitions, 3u);
  EXPECT_EQ(s3[1].layout.block, 1024u);
  EXPECT_EQ(s3[1].partitions, 8u);
  const double uniform_work = NonUniformFirBank::work_per_sample({uniform(256, 32)}, 4);
  EXPECT_LT(NonUniformFirBank::work_per_sample(s3, 4), 0.55 * uniform_work);
  // A filter of a few partitions: uniform is less work, and the plan is one level.
  const std::vector<FirLevel> short_filter = NonUniformFirBank::plan(1023, 256, 2);
  ASSERT_EQ(short_filter.size(), 1u);
  EXPECT_EQ(short_filter[0].partitions, 4u);
  // In the background (S3's three filtered bands): the later levels deferred by half their block,
  // the first level longer to make up for it, and the busier thread's share below the whole plan's.
  const std::vector<FirLevel> bg = NonUniformFirBank::plan(8191, 256, 3, true);
  ASSERT_EQ(bg.size(), 2u);
  EXPECT_EQ(bg[0].partitions, 5u);
  EXPECT_EQ(bg[0].defer, 0u);
  EXPECT_EQ(bg[1].layout.block, 1024u);
  EXPECT_EQ(bg[1].partitions, 7u);
  EXPECT_EQ(bg[1].defer, 512u);
  const double busier = std::max(NonUniformFirBank::work_per_sample({bg[0]}, 3),
                                 NonUniformFirBank::work_per_sample({bg[1]}, 3));
  EXPECT_LT(busier, 0.65 * NonUniformFirBank::work_per_sample(NonUniformFirBank::plan(8191, 256, 3), 3));
  // Every plan builds (each level starts exactly where its latency allows) and holds the filter.
  for (bool background : {false, true})
    for (uint32_t block : {16u, 64u, 256u, 1024u})
      for (size_t taps : {size_t(17), size_t(500), size_t(4097), size_t(50000), size_t(1) << 20}) {
        SCOPED_TRACE("block " + std::to_string(block) + ", taps " + std::to_string(taps) +
                     (background ? ", background" : ""));
        const std::vector<FirLevel> levels = NonUniformFirBank::plan(taps, block, 1, background);
        NonUniformFirBank bank({std::vector<float>(taps, 0.5f)}, 1, levels);
        EXPECT_GE(bank.capacity(), taps);
        EXPECT_EQ(bank.latency_frames(), block);
        if (!background) {
          EXPECT_LE(NonUniformFirBank::work_per_sample(levels, 1),
                    NonUniformFirBank::work_per_sample({uniform(block, uint32_t((taps + block - 1) / block))}, 1));
        }
      }
}

// Planned and hand-made levels (one with zeros ahead of a level), bands of different lengths (one
// ending before the later levels), 1 and 3 channels, aligned and staggered, in chunks of every
// kind: equal to the float64 convolution delayed by the first block.
TEST(NonUniformFirBank, EqualsTheConvolutionDelayedByTheFirstBlock) {
  struct Case {
    std::string name;
    std::vector<FirLevel> levels;
    size_t taps;
    bool worker = false;  // the deferred levels on a BlockWorker
  };
  FirLevel deferred_256 = uniform(256, 3);
  deferred_256.defer = 100;  // may start at 256 + 100 - 64 = 292: 28 zeros ahead of its taps at 320
  const std::vector<Case> cases = {
      {"planned 64", NonUniformFirBank::plan(3000, 64, 3), 3000},
      {"3x64, 3x256, 1x1024", {uniform(64, 3), uniform(256, 3), uniform(1024, 1)}, 1984},
      // Level 1 starts at 320, after 256 - 64 = 192: 128 zeros ahead of its taps.
      {"5x64, 3x256 padded", {uniform(64, 5), uniform(256, 3)}, 900},
      {"16 then 32 (g = 2)", {uniform(16, 1), uniform(32, 1), uniform(64, 1), uniform(128, 4)}, 600},
      {"planned 64 in the background", NonUniformFirBank::plan(3000, 64, 3, true), 3000, true},
      {"5x64, 3x256 deferred 100, inline", {uniform(64, 5), deferred_256}, 900},
      {"5x64, 3x256 deferred 100, on the worker", {uniform(64, 5), deferred_256}, 900, true},
  };
  BlockWorker worker;
  const uint32_t total = 5000;
  for (const Case& k : cases)
    for (BlockPhases phases : {BlockPhases::kAligned, BlockPhases::kStaggered})
      for (uint32_t channels : {1u, 3u}) {
        SCOPED_TRACE(k.name + (phases == BlockPhases::kAligned ? ", aligned, " : ", staggered, ") +
                     std::to_string(channels) + " channels");
        const auto taps = normalised_taps({k.taps, 50, k.taps / 2 + 3}, uint32_t(k.taps));
        NonUniformFirBank bank(taps, channels, k.levels, FftPlanning::kEstimate, phases, k.worker ? &worker : nullptr);
        const std::vector<float> x = randn(size_t(channels) * total, 5 + channels);
        const std::vector<float> got = run_chunked(bank, x, channels, 3, total, {1, 7, 64, 100, 256, 1000, 33});
        const uint32_t lat = bank.latency_frames();
        for (uint32_t b = 0; b < 3; ++b)
          for (uint32_t c = 0; c < channels; ++c) {
            const std::vector<float> ref = convolve(taps[b], &x[size_t(c) * total], total);
            const double tol = test::kFirOutputRel * std::max(1.0, max_abs(ref));
            const float* y = &got[(size_t(b) * channels + c) * total];
            for (uint32_t i = 0; i < lat; ++i) ASSERT_NEAR(y[i], 0.0f, tol) << "band " << b << " sample " << i;
            for (uint32_t i = lat; i < total; ++i)
              ASSERT_NEAR(y[i], ref[i - lat], tol) << "band " << b << " channel " << c << " sample " << i;
          }
      }
}

// A swap mid-stream: before it the old filter's output, after the largest level's block the new
// one's; in between, each level's share lies between its old and new stretch's output, so the sum
// lies between the sums of the per-level minima and maxima (no click). A second swap staged while
// the first is still crossing over follows it.
TEST(NonUniformFirBank, TapSwapCrossfadesEveryLevelAndEndsOnTheNewFilter) {
  const std::vector<FirLevel> levels = {uniform(64, 3), uniform(256, 3), uniform(1024, 1)};
  const size_t len = 1900;
  const uint32_t total = 9000, swap_at = 3000, chunk = 50;
  const auto old_taps = normalised_taps({len}, 1), new_taps = normalised_taps({len}, 2);
  const auto last_taps = normalised_taps({len - 700}, 3);
  const std::vector<float> x = randn(total, 8);
  NonUniformFirBank bank(old_taps, 1, levels);
  std::vector<float> y(total, std::nanf(""));
  for (uint32_t at = 0; at < total; at += chunk) {
    if (at == swap_at) bank.set_taps(new_taps);
    if (at == swap_at + 100) {  // level 0 has crossed over, levels 1 and 2 have not
      ASSERT_TRUE(bank.crossfade_pending());
      if (!HasFailure()) bank.set_taps(new_taps);  // restaged: same taps, must change nothing
    }
    bank.process(x.data() + at, total, chunk, y.data() + at, total);
  }
  EXPECT_FALSE(bank.crossfade_pending());
  const uint32_t lat = bank.latency_frames();
  const std::vector<float> old_y = convolve(old_taps[0], x.data(), total), new_y = convolve(new_taps[0], x.data(), total);
  const double tol = test::kFirOutputRel * std::max(max_abs(old_y), max_abs(new_y));
  // Level stretches: [0, 192), [192, 960), [960, 1984).
  const size_t edges[] = {0, 192, 960, 1984};
  std::vector<std::vector<float>> old_part, new_part;
  for (int k = 0; k < 3; ++k) {
    old_part.push_back(convolve(old_taps[0], x.data(), total, edges[k], edges[k + 1]));
    new_part.push_back(convolve(new_taps[0], x.data(), total, edges[k], edges[k + 1]));
  }
  const uint32_t settled = swap_at + 2 * 1024 + lat;
  for (uint32_t n = lat; n < total; ++n) {
    const uint32_t i = n - lat;
    if (n < swap_at) {
      ASSERT_NEAR(y[n], old_y[i], tol) << n;
    } else if (n >= settled) {
      ASSERT_NEAR(y[n], new_y[i], tol) << n;
    } else {
      double lo = 0, hi = 0;
      for (int k = 0; k < 3; ++k) {
        lo += std::min(old_part[k][i], new_part[k][i]);
        hi += std::max(old_part[k][i], new_part[k][i]);
      }
      ASSERT_GE(y[n], lo - tol) << n;
      ASSERT_LE(y[n], hi + tol) << n;
    }
  }
  // Staged while a level is still crossing over: it follows, and the bank ends on it.
  NonUniformFirBank queued(old_taps, 1, levels);
  std::vector<float> z(total);
  for (uint32_t at = 0; at < total; at += chunk) {
    if (at == swap_at) queued.set_taps(new_taps);
    if (at == swap_at + 100) queued.set_taps(last_taps);  // level 0 has crossed over, 1 and 2 not
    queued.process(x.data() + at, total, chunk, z.data() + at, total);
  }
  const std::vector<float> last_y = convolve(last_taps[0], x.data(), total);
  for (uint32_t n = total - 1500; n < total; ++n) ASSERT_NEAR(z[n], last_y[n - lat], tol) << n;
}

// The two steps of a reload (what lets a bank split over threads switch all parts or none):
// staged taps change no level's output until committed, refused taps stage nothing, and a commit
// switches every level, the bank ending on the new filter.
TEST(NonUniformFirBank, StagedTapsChangeNothingUntilCommitted) {
  const std::vector<FirLevel> levels = {uniform(64, 3), uniform(256, 3), uniform(1024, 1)};
  const size_t len = 1900;
  const uint32_t total = 9000, stage_at = 2000, commit_at = 5000, chunk = 50;
  const auto old_taps = normalised_taps({len}, 11), new_taps = normalised_taps({len}, 12);
  const std::vector<float> x = randn(total, 13);
  NonUniformFirBank bank(old_taps, 1, levels);
  NonUniformFirBank::StagedTaps staged;
  std::vector<float> y(total, std::nanf(""));
  for (uint32_t at = 0; at < total; at += chunk) {
    if (at == stage_at) {
      staged = bank.stage_taps(new_taps);
      ASSERT_EQ(staged.size(), levels.size());
      EXPECT_THROW((void)bank.stage_taps(normalised_taps({len + 200}, 14)), std::invalid_argument);  // > capacity
      EXPECT_FALSE(bank.crossfade_pending());
    }
    if (at == commit_at) {
      bank.commit_taps(std::move(staged));
      EXPECT_TRUE(bank.crossfade_pending());
    }
    bank.process(x.data() + at, total, chunk, y.data() + at, total);
  }
  EXPECT_FALSE(bank.crossfade_pending());
  const uint32_t lat = bank.latency_frames();
  const std::vector<float> old_y = convolve(old_taps[0], x.data(), total), new_y = convolve(new_taps[0], x.data(), total);
  const double tol = test::kFirOutputRel * std::max(max_abs(old_y), max_abs(new_y));
  ASSERT_GT(max_abs(old_y), 10 * tol);
  for (uint32_t n = lat; n < commit_at; ++n) ASSERT_NEAR(y[n], old_y[n - lat], tol) << n;  // staged: still old
  for (uint32_t n = commit_at + 2 * 1024 + lat; n < total; ++n) ASSERT_NEAR(y[n], new_y[n - lat], tol) << n;
}

TEST(NonUniformFirBank, RefusesLevelsThatCannotKeepTheLatency) {
  const auto taps = normalised_taps({2000}, 4);
  auto refused = [&](std::vector<FirLevel> levels, const std::string& words) {
    try {
      NonUniformFirBank bank(taps, 1, std::move(levels));
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({}, "levels must be 1..16");
  refused({uniform(64, 1), uniform(1024, 4)}, "before block + defer - latency = 960");  // starts at 64
  FirLevel late = uniform(256, 8), first = uniform(64, 3);
  late.defer = 128;
  refused({uniform(64, 3), late}, "(block 256, deferred 128) starts at tap 192, before block + defer - latency = 320");
  late.defer = 300;
  refused({uniform(64, 40), late}, "defer (300) must be at most its block");
  first.defer = 1;
  refused({first, uniform(256, 8)}, "level 0 cannot be deferred");
  refused({uniform(256, 4), uniform(128, 20)}, "larger than level 0's");
  refused({uniform(64, 3), {PartitionedFirBank::single_block(300, 1024), 1}}, "must be uniform");
  refused({uniform(64, 3), uniform(256, 2)}, "the levels hold 704 taps, the filter has 2000");
  refused({uniform(64, 40), uniform(256, 2)}, "holds only the 2368 zeros that delay it");
  refused({uniform(64, 40), uniform(256, 10)}, "past the filter's 2000 taps");
  refused({uniform(64, 0)}, "at least 1 partition");
  NonUniformFirBank bank(normalised_taps({1900}, 4), 1, {uniform(64, 3), uniform(256, 3), uniform(1024, 1)});
  EXPECT_EQ(bank.capacity(), 1984u);  // 192 + 768 + 1024
  EXPECT_THROW(bank.set_taps(normalised_taps({1985}, 5)), std::invalid_argument);
  EXPECT_THROW(bank.set_taps(normalised_taps({100, 100}, 5)), std::invalid_argument);
  bank.set_taps(normalised_taps({1984}, 5));
}

// Feeds x (channels x total) to a streaming bank in chunks and checks every band against the
// float64 convolution delayed by `latency`.
void expect_convolution(StreamingFirBank& bank, const std::vector<std::vector<float>>& taps, uint32_t channels,
                        uint32_t total, uint32_t chunk, uint32_t latency) {
  const uint32_t bands = uint32_t(taps.size());
  const std::vector<float> x = randn(size_t(channels) * total, 10);
  std::vector<float> in(size_t(channels) * chunk), out(bands * size_t(channels) * chunk);
  std::vector<float> got(bands * size_t(channels) * total);
  for (uint32_t at = 0; at < total; at += chunk) {
    const uint32_t n = std::min(chunk, total - at);
    for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * chunk]);
    std::fill(out.begin(), out.end(), std::nanf(""));
    bank.process(in.data(), chunk, n, out.data(), chunk);
    for (uint32_t lane = 0; lane < bands * channels; ++lane)
      std::copy_n(&out[size_t(lane) * chunk], n, &got[size_t(lane) * total + at]);
  }
  for (uint32_t b = 0; b < bands; ++b)
    for (uint32_t c = 0; c < channels; ++c) {
      const std::vector<float> ref = convolve(taps[b], &x[size_t(c) * total], total);
      const double tol = test::kFirOutputRel * std::max(1.0, max_abs(ref));
      for (uint32_t i = latency; i < total; ++i)
        ASSERT_NEAR(got[(size_t(b) * channels + c) * total + i], ref[i - latency], tol)
            << "band " << b << " ch " << c << " i " << i;
    }
}

// The pipeline's facade takes the non-uniform form where the plan says so. Where its few channels
// would split just two ways it runs the later levels deferred on a worker thread (the same latency).
TEST(NonUniformFirBank, StreamingBankUsesItUnderATightLatency) {
  WorkerPool pool(2);
  const uint32_t channels = 3, total = 12000, chunk = 256;
  const auto taps = normalised_taps({8191, 8191}, 9);
  StreamingFirBank bank(taps, channels, chunk, 256, FftPlanning::kEstimate, &pool);
  EXPECT_EQ(bank.form(), StreamingFirBank::Form::kNonUniform);
  EXPECT_EQ(bank.latency_frames(), 256u);
  const std::vector<FirLevel> planned = NonUniformFirBank::plan(8191, 256, 2, true);  // 5 x 256, 7 x 1024
  ASSERT_GT(planned.size(), 1u);
  ASSERT_GT(planned[1].defer, 0u);
  const NonUniformFirBank alone(taps, 1, planned);
  EXPECT_NE(bank.describe().find(": " + alone.describe() + ", deferred levels on a second thread"), std::string::npos)
      << bank.describe();
  EXPECT_EQ(bank.parallel_parts(), 1u);
  expect_convolution(bank, taps, channels, total, chunk, 256);
  // Four threads: three channels split three ways (wider than two), two channels still defer.
  WorkerPool four(4);
  StreamingFirBank wide(taps, channels, chunk, 256, FftPlanning::kEstimate, &four);
  EXPECT_EQ(wide.parallel_parts(), 3u);
  EXPECT_EQ(wide.describe().find("deferred"), std::string::npos) << wide.describe();
  StreamingFirBank two_channels(taps, 2, chunk, 256, FftPlanning::kEstimate, &four);
  EXPECT_EQ(two_channels.parallel_parts(), 1u);
  EXPECT_NE(two_channels.describe().find("deferred levels on a second thread"), std::string::npos)
      << two_channels.describe();
  // Without a pool: the plan of least work, every level on the caller's thread.
  StreamingFirBank single(taps, channels, chunk, 256, FftPlanning::kEstimate);
  const NonUniformFirBank inline_plan(taps, 1, NonUniformFirBank::plan(8191, 256, 2));
  EXPECT_NE(single.describe().find(": " + inline_plan.describe()), std::string::npos) << single.describe();
  EXPECT_EQ(single.describe().find("deferred"), std::string::npos) << single.describe();
}

// Many channels: the channels split over the pool's threads, nothing deferred.
TEST(NonUniformFirBank, StreamingBankSplitsManyChannelsOverThePool) {
  WorkerPool pool(2);
  const uint32_t channels = 17, total = 3000, chunk = 256;
  ASSERT_GT(uint64_t(channels) * 256, StreamingFirBank::kBackgroundMaxSamples);
  const auto taps = normalised_taps({5000, 3000}, 11);
  StreamingFirBank bank(taps, channels, chunk, 256, FftPlanning::kEstimate, &pool);
  EXPECT_EQ(bank.form(), StreamingFirBank::Form::kNonUniform);
  EXPECT_EQ(bank.parallel_parts(), 2u);
  EXPECT_EQ(bank.describe().find("deferred"), std::string::npos) << bank.describe();
  expect_convolution(bank, taps, channels, total, chunk, 256);
}

}  // namespace
}  // namespace vigil
