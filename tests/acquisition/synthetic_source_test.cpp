#include "acquisition/synthetic_source.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

#include "../support/read_frames.hpp"
#include "acquisition/chunk_pool.hpp"

namespace vigil {
namespace {

SyntheticSpec base(SampleFormat fmt = SampleFormat::kFloat32) {
  SyntheticSpec s;
  s.rate_hz = 48000;
  s.channels = 3;
  s.format = fmt;
  s.chunk_frames = 500;
  s.rate_factor = 0;
  s.seed = 7;
  ChannelSignal sig;
  sig.sines = {{1000.0, 0.3, 0.25}, {3100.0, 0.1, 0.0}};
  sig.noise_rms = 0.05;
  sig.impulses.amplitude = 0.5;
  sig.impulses.period_s = 0.01;
  sig.bursts.amplitude = 0.4;
  sig.bursts.freq_hz = 9000;
  sig.bursts.decay_s = 0.001;
  sig.bursts.rate_hz = 20;
  s.signals = {sig};
  return s;
}

using test::read_frames;

TEST(SyntheticSource, SameSeedSameSignalDifferentSeedDifferent) {
  SyntheticSource a(base()), b(base());
  SyntheticSpec other = base();
  other.seed = 8;
  SyntheticSource c(other);
  const auto xa = read_frames(a, 5000), xb = read_frames(b, 5000), xc = read_frames(c, 5000);
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa[0], xc[0]);
  // Channels get independent noise.
  EXPECT_NE(xa[0], xa[1]);
}

TEST(SyntheticSource, StreamDoesNotDependOnChunkSize) {
  SyntheticSpec s1 = base(), s2 = base();
  s1.chunk_frames = 1000;
  s2.chunk_frames = 37;
  SyntheticSource a(s1), b(s2);
  EXPECT_EQ(read_frames(a, 20000), read_frames(b, 20000));
}

// loop_s: the first loop_s of the signal, generated once, then repeated exactly, whatever the
// chunk size; frame numbers and times run on.
TEST(SyntheticSource, ALoopRepeatsTheFirstSecondsExactly) {
  SyntheticSpec looped = base();
  looped.loop_s = 0.1;  // 4800 frames: not a multiple of the 500-frame chunk
  SyntheticSource fresh(base()), src(looped);
  const auto want = read_frames(fresh, 4800);
  const auto got = read_frames(src, 3 * 4800 + 123);
  for (uint32_t ch = 0; ch < 3; ++ch)
    for (size_t i = 0; i < got[ch].size(); ++i) ASSERT_EQ(got[ch][i], want[ch][i % 4800]) << ch << " " << i;
  EXPECT_EQ(src.frames_produced(), 15000u);  // 30 chunks of 500
  SyntheticSpec bad = base();
  bad.loop_s = -1;
  EXPECT_THROW(SyntheticSource{bad}, std::invalid_argument);
}

// Chunks of 8 MiB or more are copied from the loop by several threads (copy_threads: the
// default, one, three): the same frames.
TEST(SyntheticSource, ALargeChunkCopiedInPartsRepeatsTheLoopExactly) {
  SyntheticSpec looped = base();
  looped.channels = 32;
  looped.chunk_frames = 65536;  // 32 x 65536 float32: 8 MiB
  looped.loop_s = 1.5;          // 72000 frames: the second chunk wraps inside a part
  SyntheticSpec plain = looped;
  plain.loop_s = 0;
  SyntheticSource fresh(plain);
  const auto want = read_frames(fresh, 72000);
  for (uint32_t copiers : {0u, 1u, 3u}) {
    looped.copy_threads = copiers;
    SyntheticSource src(looped);
    const auto got = read_frames(src, 3 * 65536);
    for (uint32_t ch = 0; ch < 32; ++ch)
      for (size_t i = 0; i < got[ch].size(); ++i)
        ASSERT_EQ(got[ch][i], want[ch][i % 72000]) << copiers << " copiers: " << ch << " " << i;
  }
}

TEST(SyntheticSource, SineIsExactAndQuantisedToOneLsb) {
  SyntheticSpec s = base(SampleFormat::kInt16);
  s.channels = 1;
  s.signals = {ChannelSignal{}};
  s.signals[0].sines = {{1234.5, 0.7, 0.3}};
  SyntheticSource src(s);
  ChunkPool pool(2, 500 * 2);
  ASSERT_EQ(src.read(pool.chunk(0)), ReadStatus::kOk);
  const auto* d = reinterpret_cast<const int16_t*>(pool.chunk(0).data);
  double max_err = 0;
  for (int n = 0; n < 500; ++n) {
    const double want = 0.7 * std::sin(2 * std::numbers::pi * 1234.5 * n / 48000.0 + 0.3) * 32768.0;
    max_err = std::max(max_err, std::fabs(d[n] - want));
  }
  EXPECT_LE(max_err, 0.5 + 1e-3);  // round to nearest
}

TEST(SyntheticSource, NoiseHasTheRequestedRms) {
  SyntheticSpec s = base();
  s.channels = 1;
  s.signals = {ChannelSignal{}};
  s.signals[0].noise_rms = 0.2;
  SyntheticSource src(s);
  const auto x = read_frames(src, 200000)[0];
  double sum = 0, sum_sq = 0;
  for (float v : x) {
    sum += v;
    sum_sq += double(v) * v;
  }
  const double mean = sum / double(x.size()), rms = std::sqrt(sum_sq / double(x.size()));
  EXPECT_NEAR(mean, 0.0, 0.005);   // 5 standard errors (0.2/sqrt(2e5) = 4.5e-4) would be 0.0023
  EXPECT_NEAR(rms, 0.2, 0.002);    // relative standard error of rms ~ 1/sqrt(2N) = 0.16 %
}

TEST(SyntheticSource, ImpulsesAndBurstsStartAtTheirFrames) {
  SyntheticSpec s = base();
  s.channels = 1;
  s.signals = {ChannelSignal{}};
  s.signals[0].impulses.amplitude = 0.9;
  s.signals[0].impulses.period_s = 0.1;      // frames 240, 5040, 9840, ...
  s.signals[0].impulses.offset_s = 0.005;
  s.signals[0].bursts.amplitude = 0.5;
  s.signals[0].bursts.freq_hz = 6000;        // 8 samples per cycle
  s.signals[0].bursts.decay_s = 0.0005;      // 24 samples
  s.signals[0].bursts.times_s = {0.05};      // frame 2400
  SyntheticSource src(s);
  const auto x = read_frames(src, 12000)[0];
  for (size_t n = 0; n < x.size(); ++n) {
    const bool impulse = n == 240 || n == 5040 || n == 9840;
    const bool burst = n >= 2400 && n < 2400 + 240;
    if (impulse) {
      EXPECT_FLOAT_EQ(x[n], 0.9f) << "frame " << n;
    } else if (burst) {
      const double k = double(n - 2400);
      const double want = 0.5 * std::exp(-k / 24.0) * std::sin(2 * std::numbers::pi * 6000 * k / 48000);
      EXPECT_NEAR(x[n], want, 1e-6) << "frame " << n;
    } else {
      EXPECT_EQ(x[n], 0.0f) << "frame " << n;
    }
  }
}

TEST(SyntheticSource, PoissonBurstsArriveAtAboutTheirRate) {
  SyntheticSpec s = base();
  s.channels = 1;
  s.signals = {ChannelSignal{}};
  s.signals[0].bursts = {1.0, 5000, 0.0, 0.0002, 50.0, {}};
  SyntheticSource src(s);
  const auto x = read_frames(src, 48000 * 10)[0];
  // Count onsets: a sample that is non-zero after at least 200 zero samples.
  int onsets = 0;
  size_t zeros = 1000;
  for (float v : x) {
    if (v != 0.0f && zeros >= 200) ++onsets;
    zeros = v == 0.0f ? zeros + 1 : 0;
  }
  // 500 bursts expected; one counts as an onset only when the gap since the previous one exceeds
  // its 96-sample length plus the 200-sample dead time: expected 500 * exp(-296/960) = 367.
  const double expected = 500.0 * std::exp(-296.0 / 960.0);
  EXPECT_GT(onsets, expected * 0.85);
  EXPECT_LT(onsets, expected * 1.15);
}

TEST(SyntheticSource, DurationEndsTheStreamExactly) {
  SyntheticSpec s = base();
  s.duration_s = 0.1;  // 4800 frames = 9 chunks of 500 + one of 300
  SyntheticSource src(s);
  ChunkPool pool(2, 500 * 3 * 4);
  uint64_t frames = 0;
  int chunks = 0;
  while (src.read(pool.chunk(0)) == ReadStatus::kOk) {
    frames += pool.chunk(0).header.frames;
    ++chunks;
  }
  EXPECT_EQ(frames, 4800u);
  EXPECT_EQ(chunks, 10);
  EXPECT_EQ(src.read(pool.chunk(0)), ReadStatus::kEnd);
}

TEST(SyntheticSource, PacingIsNeverFasterThanTheRateFactor) {
  SyntheticSpec s = base();
  s.rate_factor = 10;      // 0.5 s of signal in 50 ms
  s.duration_s = 0.5;
  SyntheticSource src(s);
  ChunkPool pool(2, 500 * 3 * 4);
  const auto t0 = std::chrono::steady_clock::now();
  int64_t last_utc = 0;
  while (src.read(pool.chunk(0)) == ReadStatus::kOk) {
    EXPECT_GT(pool.chunk(0).header.t_first_utc_ns, last_utc);
    last_utc = pool.chunk(0).header.t_first_utc_ns;
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(elapsed, 0.05 * 0.98);  // a lower bound only: an upper bound would flake on a busy machine
}

// A reader that takes chunks slower than they are due: the source, which cannot deliver them in
// time, counts each one more than a chunk period late; read in time (the first chunk, and after a
// pause shorter than a period), none.
TEST(SyntheticSource, ChunksDeliveredMoreThanAPeriodLateAreCounted) {
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, the pace's clock
  SyntheticSpec s = base();
  s.rate_factor = 1;  // 500 frames at 48 kHz: a chunk due every period P = 10.4 ms
  s.duration_s = 1;
  const auto period = std::chrono::nanoseconds(500'000'000'000 / 48'000);
  SyntheticSource src(s);
  ChunkPool pool(2, 500 * 3 * 4);
  const Clock::time_point first_before = Clock::now();
  ASSERT_EQ(src.read(pool.chunk(0)), ReadStatus::kOk);  // starts the pace, returns when chunk 0 is due
  const Clock::time_point first_after = Clock::now();
  EXPECT_EQ(src.late_chunks(), 0u);
  // Chunk k is due at start + (k+1)P and counted late where it is read more than a period past
  // that. A 60 ms pause after the first: chunks 1 to 4 are then past due by about 50, 39, 29 and
  // 18 ms (counted, and read at once), chunk 5 by about 8 ms (within a period), and from chunk 6
  // on the source waits again. How many more are late depends on how long this machine stalled
  // the test, so each read is timed: one wholly after start + (k+2)P must be counted, one wholly
  // before it must not, and only those in between may go either way.
  const Clock::time_point start_earliest = first_before;
  const Clock::time_point start_latest = first_after - period;
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  uint64_t must_be_late = 0;
  uint64_t may_be_late = 0;
  for (int k = 1; k <= 10; ++k) {
    const Clock::time_point before = Clock::now();
    ASSERT_EQ(src.read(pool.chunk(0)), ReadStatus::kOk);
    const Clock::time_point after = Clock::now();
    if (before > start_latest + (k + 2) * period) ++must_be_late;
    else if (after > start_earliest + (k + 2) * period) ++may_be_late;
  }
  EXPECT_GE(must_be_late, 4u);  // the 60 ms pause alone makes chunks 1 to 4 late
  EXPECT_GE(src.late_chunks(), must_be_late);
  EXPECT_LE(src.late_chunks(), must_be_late + may_be_late);
  const SyntheticSource unpaced(base());
  EXPECT_EQ(unpaced.late_chunks(), 0u);
}

TEST(SyntheticSource, RejectsBadSpecs) {
  auto bad = [](auto mutate) {
    SyntheticSpec s = base();
    mutate(s);
    EXPECT_THROW(SyntheticSource{s}, std::invalid_argument);
  };
  bad([](SyntheticSpec& s) { s.channels = 0; });
  bad([](SyntheticSpec& s) { s.rate_hz = 0; });
  bad([](SyntheticSpec& s) { s.chunk_frames = 0; });
  bad([](SyntheticSpec& s) { s.rate_factor = -1; });
  bad([](SyntheticSpec& s) { s.signals.resize(2); });  // 2 signals for 3 channels
  bad([](SyntheticSpec& s) { s.signals[0].sines[0].freq_hz = 30000; });  // above Nyquist
  bad([](SyntheticSpec& s) { s.signals[0].bursts.decay_s = 0; });
  bad([](SyntheticSpec& s) { s.signals[0].impulses.times_s = {0.2, 0.1}; });
}

}  // namespace
}  // namespace vigil
