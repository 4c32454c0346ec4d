// A complementary bank (a crossover) computes its last band as the delayed input minus the others:
// the bank's output must still equal the direct-form specification of every band (the last band's
// own taps included), in any chunking, alone and over a pool, in each FFT form, through a reload.
#include "dsp/complementary_band.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"
#include "dsp/fir_bank.hpp"
#include "dsp/fir_design.hpp"
#include "dsp/streaming_fir_bank.hpp"
#include "core/worker_pool.hpp"

namespace vigil {
namespace {

using test::randn;

std::vector<std::vector<float>> crossover(const std::vector<double>& edges_hz, size_t taps, double rate_hz) {
  std::vector<std::vector<float>> out;
  for (const std::vector<double>& h : design_crossover(edges_hz, taps, rate_hz, WindowSpec{}))
    out.emplace_back(h.begin(), h.end());
  return out;
}

// Streams x (channels x total, planar) through bank in chunks of random sizes up to max_chunk;
// returns the bands x channels x total output.
std::vector<float> stream(StreamingFirBank& bank, const std::vector<float>& x, uint32_t channels, uint32_t total,
                          uint32_t bands, uint32_t max_chunk, uint32_t seed,
                          const std::vector<std::pair<uint32_t, std::vector<std::vector<float>>>>& reloads = {}) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> size(1, max_chunk);
  std::vector<float> got(size_t(bands) * channels * total);
  std::vector<float> in(size_t(channels) * max_chunk), out(size_t(bands) * channels * max_chunk);
  size_t next_reload = 0;
  for (uint32_t at = 0; at < total;) {
    if (next_reload < reloads.size() && at >= reloads[next_reload].first) bank.set_taps(reloads[next_reload++].second);
    const uint32_t n = std::min(size(rng), total - at);
    for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * n]);
    std::fill(out.begin(), out.end(), std::nanf(""));  // poisoned: every output sample must be written
    bank.process(in.data(), n, n, out.data(), n);
    for (uint32_t lane = 0; lane < bands * channels; ++lane)
      std::copy_n(&out[size_t(lane) * n], n, &got[size_t(lane) * total + at]);
    at += n;
  }
  return got;
}

TEST(ComplementaryBand, FindsTheImpulseDelayOfACrossoverOnly) {
  EXPECT_EQ(ComplementaryBand::impulse_delay(crossover({250, 2000, 8000}, 1023, 48000), 1e-6), 511);
  EXPECT_EQ(ComplementaryBand::impulse_delay(crossover({1000}, 63, 51200), 1e-6), 31);
  // Explicit bands that do not add up, one band, bands of different lengths, a tap off by 1e-5.
  EXPECT_EQ(ComplementaryBand::impulse_delay({randn(63, 1), randn(63, 2)}, 1e-6), -1);
  EXPECT_EQ(ComplementaryBand::impulse_delay({std::vector<float>(7, 0.0f)}, 1e-6), -1);
  std::vector<std::vector<float>> uneven = crossover({1000}, 63, 51200);
  uneven[1].push_back(0.0f);
  EXPECT_EQ(ComplementaryBand::impulse_delay(uneven, 1e-6), -1);
  std::vector<std::vector<float>> off = crossover({1000, 5000}, 255, 51200);
  off[1][40] += 1e-5f;
  EXPECT_EQ(ComplementaryBand::impulse_delay(off, 1e-6), -1);
  // Two impulses are not one.
  EXPECT_EQ(ComplementaryBand::impulse_delay({{1.0f, 0.0f, 1.0f}, {0.0f, 0.0f, 0.0f}}, 1e-6), -1);
}

TEST(ComplementaryBand, RejectsBadParameters) {
  EXPECT_THROW(ComplementaryBand(0, 10, 64), std::invalid_argument);
  EXPECT_THROW(ComplementaryBand(4097, 10, 64), std::invalid_argument);
  EXPECT_THROW(ComplementaryBand(2, 10, 0), std::invalid_argument);
  EXPECT_THROW(ComplementaryBand(2, (1u << 24) + 1, 64), std::invalid_argument);
  // A bank told its bands are complementary checks it, at start and on a reload.
  EXPECT_THROW(StreamingFirBank({randn(255, 1), randn(255, 2)}, 2, 256, 256, FftPlanning::kEstimate, nullptr,
                                FirForm::kAuto, true),
               std::invalid_argument);
  StreamingFirBank bank(crossover({1000, 5000}, 255, 51200), 2, 256, 256, FftPlanning::kEstimate, nullptr,
                        FirForm::kAuto, true);
  EXPECT_TRUE(bank.last_band_from_the_rest());
  EXPECT_THROW(bank.set_taps({randn(255, 3), randn(255, 4), randn(255, 5)}), std::invalid_argument);
  EXPECT_THROW(bank.set_taps(crossover({1000, 5000}, 253, 51200)), std::invalid_argument);  // another delay
}

// Both FFT forms a crossover takes (non-uniform partitions at a 256-frame latency: 3 x 256,
// 3 x 1024; one partition of 4096 at 4096), alone and
// over pools of 2 and 3 threads (5 channels: uneven parts), in random chunk sizes: each band, the
// last one included, equals the direct form of its own taps delayed by the latency.
TEST(ComplementaryBand, TheBankEqualsEveryBandsSpecificationDelayed) {
  const uint32_t channels = 5, total = 20000, bands = 4;
  const std::vector<std::vector<float>> taps = crossover({250, 2000, 8000}, 3071, 48000);
  const std::vector<float> x = randn(size_t(channels) * total, 21);
  FirBank ref_bank(taps, channels, total);
  std::vector<float> ref(size_t(bands) * channels * total);
  ref_bank.process(x.data(), total, total, ref.data(), total);
  const double max_ref = std::max(1.0, test::max_abs(ref));
  for (uint32_t threads : {0u, 2u, 3u})
    for (uint32_t latency : {256u, 4096u}) {
      std::unique_ptr<WorkerPool> pool = threads ? std::make_unique<WorkerPool>(threads) : nullptr;
      StreamingFirBank bank(taps, channels, 700, latency, FftPlanning::kEstimate, pool.get(), FirForm::kAuto, true);
      SCOPED_TRACE(bank.describe());
      ASSERT_TRUE(bank.last_band_from_the_rest());
      EXPECT_EQ(bank.form(), latency == 256 ? StreamingFirBank::Form::kNonUniform : StreamingFirBank::Form::kUniform);
      const std::vector<float> got = stream(bank, x, channels, total, bands, 700, 22 + threads + latency);
      const uint32_t lat = bank.latency_frames();
      for (uint32_t lane = 0; lane < bands * channels; ++lane)
        for (uint32_t i = 0; i < total; ++i) {
          const float want = i < lat ? 0.0f : ref[size_t(lane) * total + i - lat];
          ASSERT_NEAR(got[size_t(lane) * total + i], want, test::kFirOutputRel * max_ref)
              << "band " << lane / channels << " channel " << lane % channels << " sample " << i;
        }
    }
}

// A reload to another crossover: the last band stays the delayed input minus the others through
// the crossfade (every sample), and once the largest block has passed every band is the new
// filter's.
TEST(ComplementaryBand, AReloadCrossfadesTheLastBandWithTheOthers) {
  const uint32_t channels = 3, total = 30000, bands = 4;
  const std::vector<std::vector<float>> old_taps = crossover({250, 2000, 8000}, 3071, 48000);
  const std::vector<std::vector<float>> new_taps = crossover({400, 3000, 9000}, 3071, 48000);
  const std::vector<float> x = randn(size_t(channels) * total, 31);
  WorkerPool pool(2);
  StreamingFirBank bank(old_taps, channels, 512, 256, FftPlanning::kEstimate, &pool, FirForm::kAuto, true);
  const uint32_t reload_at = 9000;
  const std::vector<float> got = stream(bank, x, channels, total, bands, 512, 32, {{reload_at, new_taps}});
  const uint32_t lat = bank.latency_frames(), delay = lat + 1535;
  for (uint32_t c = 0; c < channels; ++c)
    for (uint32_t i = 0; i < total; ++i) {
      double sum = 0;
      for (uint32_t b = 0; b < bands; ++b) sum += got[(size_t(b) * channels + c) * total + i];
      const float delayed = i < delay ? 0.0f : x[size_t(c) * total + i - delay];
      ASSERT_NEAR(sum, delayed, test::kFloatSampleAbs) << "channel " << c << " sample " << i;
    }
  FirBank ref_bank(new_taps, channels, total);
  std::vector<float> ref(size_t(bands) * channels * total);
  ref_bank.process(x.data(), total, total, ref.data(), total);
  const double max_ref = std::max(1.0, test::max_abs(ref));
  const uint32_t settled = reload_at + 512 + 2 * 1024 + lat;  // the next chunk, then the largest level's block
  for (uint32_t lane = 0; lane < bands * channels; ++lane)
    for (uint32_t i = settled; i < total; ++i)
      ASSERT_NEAR(got[size_t(lane) * total + i], ref[size_t(lane) * total + i - lat], test::kFirOutputRel * max_ref)
          << "band " << lane / channels << " channel " << lane % channels << " sample " << i;
}

// The ring on its own: delays of 0 (the current chunk), shorter and longer than a chunk.
TEST(ComplementaryBand, TheLastBandIsTheDelayedInputMinusTheOthers) {
  for (uint32_t delay : {0u, 5u, 100u, 1000u}) {
    const uint32_t channels = 2, total = 3000, others = 2;
    ComplementaryBand last(channels, delay, 97);
    const std::vector<float> x = randn(size_t(channels) * total, delay + 1);
    const std::vector<float> y = randn(size_t(others) * channels * total, delay + 2);
    std::vector<float> got(size_t(channels) * total);
    std::mt19937 rng(delay);
    for (uint32_t at = 0; at < total;) {
      const uint32_t n = std::min<uint32_t>(std::uniform_int_distribution<uint32_t>(1, 97)(rng), total - at);
      std::vector<float> in(size_t(channels) * n), out(size_t(others + 1) * channels * n, std::nanf(""));
      for (uint32_t c = 0; c < channels; ++c) {
        std::copy_n(&x[size_t(c) * total + at], n, &in[size_t(c) * n]);
        for (uint32_t b = 0; b < others; ++b)
          std::copy_n(&y[(size_t(b) * channels + c) * total + at], n, &out[(size_t(b) * channels + c) * n]);
      }
      last.process(in.data(), n, n, out.data(), n, size_t(channels) * n, others);
      for (uint32_t c = 0; c < channels; ++c)
        std::copy_n(&out[(size_t(others) * channels + c) * n], n, &got[size_t(c) * total + at]);
      at += n;
    }
    for (uint32_t c = 0; c < channels; ++c)
      for (uint32_t i = 0; i < total; ++i) {
        float want = i < delay ? 0.0f : x[size_t(c) * total + i - delay];
        for (uint32_t b = 0; b < others; ++b) want -= y[(size_t(b) * channels + c) * total + i];
        ASSERT_EQ(got[size_t(c) * total + i], want) << "delay " << delay << " channel " << c << " sample " << i;
      }
  }
}

}  // namespace
}  // namespace vigil
