// The facade picks the form by length and latency budget, and each form equals the direct-form
// specification delayed by the latency it reports.
#include "dsp/streaming_fir_bank.hpp"

#include <gtest/gtest.h>

#include "../support/signals.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "../support/tolerances.hpp"

namespace vigil {
namespace {

using test::max_abs;
using test::randn;
using test::rel_l2;


TEST(StreamingFirBank, PicksTheFormByLengthAndLatency) {
  EXPECT_EQ(StreamingFirBank({randn(48, 1)}, 2, 1024, 1024).form(), StreamingFirBank::Form::kDirect);
  EXPECT_EQ(StreamingFirBank({randn(48, 1)}, 2, 1024, 1024).latency_frames(), 0u);
  const StreamingFirBank single({randn(255, 1)}, 2, 1024, 1024);
  EXPECT_EQ(single.form(), StreamingFirBank::Form::kSingleBlock);
  EXPECT_LE(single.latency_frames(), 1024u);
  EXPECT_EQ(single.latency_frames(), 770u);  // FFT 1024, block 1024 - 255 + 1
  const StreamingFirBank uniform({randn(8192, 1)}, 2, 1024, 1024);
  EXPECT_EQ(uniform.form(), StreamingFirBank::Form::kUniform);
  EXPECT_EQ(uniform.latency_frames(), 1024u);
  EXPECT_EQ(uniform.describe(), "uniformly partitioned overlap-save, 8 partitions of 1024");
  // S2's filters at its 8192-frame latency: one partition (no single FFT block fits the limit).
  const StreamingFirBank one({randn(8192, 1)}, 2, 1024, 8192);
  EXPECT_EQ(one.describe(), "uniformly partitioned overlap-save, 1 partition of 8192");
  // A latency limit just above the filter length would leave one big FFT a hop of 2 samples:
  // uniform partitions are far less work there.
  const StreamingFirBank tight({randn(1023, 1), randn(1023, 2)}, 2, 256, 256);
  EXPECT_EQ(tight.form(), StreamingFirBank::Form::kUniform);
  EXPECT_EQ(tight.latency_frames(), 256u);
  EXPECT_THROW(StreamingFirBank({randn(100, 1)}, 1, 64, 8), std::invalid_argument);
  // The form asked for overrides the length's choice.
  const StreamingFirBank forced_fft({randn(31, 1)}, 2, 1024, 1024, FftPlanning::kEstimate, nullptr, FirForm::kFft);
  EXPECT_NE(forced_fft.form(), StreamingFirBank::Form::kDirect);
  EXPECT_GT(forced_fft.latency_frames(), 0u);
  const StreamingFirBank forced_direct({randn(1000, 1)}, 2, 1024, 16, FftPlanning::kEstimate, nullptr, FirForm::kDirect);
  EXPECT_EQ(forced_direct.form(), StreamingFirBank::Form::kDirect);
  EXPECT_EQ(forced_direct.latency_frames(), 0u);
}

// A forced form gives the same filter: the FFT form at 31 taps, the direct form at 1000, each
// against the direct-form specification delayed by the form's latency.
TEST(StreamingFirBank, AForcedFormEqualsTheSpecificationDelayed) {
  const uint32_t total = 6000, chunk = 500, channels = 2;
  const std::vector<float> x = randn(size_t(channels) * total, 11);
  for (const auto& [len, form] : {std::pair{size_t(31), FirForm::kFft}, std::pair{size_t(1000), FirForm::kDirect}}) {
    const std::vector<std::vector<float>> taps = {randn(len, 12)};
    FirBank ref_bank(taps, channels, total);
    std::vector<float> ref(size_t(channels) * total), got(ref.size()), out(size_t(channels) * chunk, -999.0f);
    ref_bank.process(x.data(), total, total, ref.data(), total);
    StreamingFirBank bank(taps, channels, chunk, chunk, FftPlanning::kEstimate, nullptr, form);
    for (uint32_t at = 0; at < total; at += chunk) {
      bank.process(x.data() + at, total, chunk, out.data(), chunk);
      for (uint32_t c = 0; c < channels; ++c) std::copy_n(&out[size_t(c) * chunk], chunk, &got[size_t(c) * total + at]);
    }
    const uint32_t lat = bank.latency_frames();
    EXPECT_EQ(lat == 0, form == FirForm::kDirect) << bank.describe();
    double max_ref = 1.0;
    for (float v : ref) max_ref = std::max(max_ref, double(std::fabs(v)));
    for (uint32_t c = 0; c < channels; ++c)
      for (uint32_t i = lat; i < total; ++i)
        ASSERT_NEAR(got[size_t(c) * total + i], ref[size_t(c) * total + i - lat], test::kFirOutputRel * max_ref)
            << bank.describe() << " channel " << c << " sample " << i;
  }
}

// Alone and with its channels split over a pool of 1, 2 and 3 threads (7 channels: uneven parts).
TEST(StreamingFirBank, EveryFormEqualsTheDirectFormDelayed) {
  const uint32_t total = 12000, chunk = 1000;
  for (uint32_t threads : {0u, 1u, 2u, 3u}) {
  std::unique_ptr<WorkerPool> pool = threads ? std::make_unique<WorkerPool>(threads) : nullptr;
  const uint32_t channels = threads ? 7 : 2;
  for (size_t len : {size_t(20), size_t(255), size_t(4000)}) {
    SCOPED_TRACE("threads " + std::to_string(threads) + ", taps " + std::to_string(len));
    const std::vector<std::vector<float>> taps = {randn(len, 5), randn(len / 2 + 1, 6)};
    const std::vector<float> x = randn(size_t(channels) * total, 7);
    FirBank ref_bank(taps, channels, total);
    std::vector<float> ref(2 * size_t(channels) * total);
    ref_bank.process(x.data(), total, total, ref.data(), total);
    StreamingFirBank bank(taps, channels, chunk, chunk, FftPlanning::kEstimate, pool.get());
    if (len > StreamingFirBank::kDirectMaxTaps && threads > 1) {
      EXPECT_EQ(bank.parallel_parts(), threads);
    }
    std::vector<float> out(2 * size_t(channels) * chunk, -999.0f), got(ref.size());
    for (uint32_t at = 0; at < total; at += chunk) {
      std::vector<float> in(size_t(channels) * chunk);
      for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], chunk, &in[size_t(c) * chunk]);
      bank.process(in.data(), chunk, chunk, out.data(), chunk);
      for (uint32_t lane = 0; lane < 2 * channels; ++lane)
        std::copy_n(&out[size_t(lane) * chunk], chunk, &got[size_t(lane) * total + at]);
    }
    const uint32_t lat = bank.latency_frames();
    double max_ref = 1.0;
    for (float v : ref) max_ref = std::max(max_ref, double(std::fabs(v)));
    for (uint32_t lane = 0; lane < 2 * channels; ++lane)
      for (uint32_t i = lat; i < total; ++i)
        ASSERT_NEAR(got[size_t(lane) * total + i], ref[size_t(lane) * total + i - lat], test::kFirOutputRel * max_ref)
            << bank.describe() << " lane " << lane << " sample " << i;
  }
  }
}

// A reload with the channels split over threads: every part crossfades to the new taps.
TEST(StreamingFirBank, SplitChannelsAllTakeNewTaps) {
  WorkerPool pool(3);
  const uint32_t channels = 5, total = 8192, chunk = 512;
  const std::vector<float> x = randn(size_t(channels) * total, 4);
  StreamingFirBank bank({randn(1000, 1)}, channels, chunk, chunk, FftPlanning::kEstimate, &pool);
  ASSERT_EQ(bank.parallel_parts(), 3u);
  std::vector<float> in(size_t(channels) * chunk), out(size_t(channels) * chunk), got(size_t(channels) * total);
  for (uint32_t at = 0; at < total; at += chunk) {
    if (at == 2048) bank.set_taps({{2.0f}});  // a gain of 2: shorter than the partitions hold
    for (uint32_t c = 0; c < channels; ++c) std::copy_n(&x[size_t(c) * total + at], chunk, &in[size_t(c) * chunk]);
    bank.process(in.data(), chunk, chunk, out.data(), chunk);
    for (uint32_t c = 0; c < channels; ++c) std::copy_n(&out[size_t(c) * chunk], chunk, &got[size_t(c) * total + at]);
  }
  const uint32_t lat = bank.latency_frames();
  for (uint32_t c = 0; c < channels; ++c)  // two blocks after the reload at most, every channel is on the gain
    for (uint32_t i = 2048 + 3 * lat; i < total; ++i)
      ASSERT_NEAR(got[size_t(c) * total + i], 2.0f * x[size_t(c) * total + i - lat], test::kFloatFftSampleAbs) << "channel " << c << " i " << i;
}

TEST(FirBankCrossfade, SwapStaysBetweenOldAndNewAndEndsOnTheNew) {
  const uint32_t total = 2000, fade = 300;
  const std::vector<float> x = randn(total, 9);
  FirBank bank({{1.0f, 0.5f}}, 1, 500);
  std::vector<float> y(total);
  bank.process(x.data(), total, 500, y.data(), total);
  bank.set_taps({{-1.0f}}, fade);
  EXPECT_TRUE(bank.crossfade_pending());
  for (uint32_t at = 500; at < total; at += 250) bank.process(x.data() + at, total, 250, y.data() + at, total);
  EXPECT_FALSE(bank.crossfade_pending());
  for (uint32_t n = 1; n < total; ++n) {
    const float old_y = x[n] + 0.5f * x[n - 1], new_y = -x[n];
    if (n < 500) {
      ASSERT_FLOAT_EQ(y[n], old_y) << n;
    } else if (n >= 500 + fade - 1) {
      ASSERT_NEAR(y[n], new_y, test::kFloatValueAbs) << n;
    } else {
      ASSERT_GE(y[n], std::min(old_y, new_y) - 1e-6f) << n;
      ASSERT_LE(y[n], std::max(old_y, new_y) + 1e-6f) << n;
    }
  }
  EXPECT_THROW(bank.set_taps({{1.0f, 2.0f, 3.0f}}), std::invalid_argument);  // longer than the history holds
  EXPECT_THROW(bank.set_taps({{1.0f}, {1.0f}}), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
