// WallClockWatch: a difference between the wall clock and the monotonic one that moves by more
// than reading noise is a step, reported once with its sign and size; the time line a source
// anchors at start then follows it (follow_wall_clock), and the chunk says so.
#include "acquisition/wall_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

namespace vigil {
namespace {

TEST(WallClockWatch, OnlyAMoveBeyondTheToleranceIsAStepAndItBecomesTheNewAnchor) {
  std::mt19937_64 rng(17);
  const int64_t anchor = 1'795'000'000'000'000'000 + int64_t(rng() % 1'000'000'000);
  int64_t t = int64_t(rng() % 1'000'000'000'000);  // monotonic time of each look
  WallClockWatch w;
  w.anchor(anchor);
  std::uniform_int_distribution<int64_t> noise(-WallClockWatch::kToleranceNs, WallClockWatch::kToleranceNs);
  for (int i = 0; i < 1000; ++i, t += WallClockWatch::kSettleNs)
    ASSERT_EQ(w.step(anchor + noise(rng), t), 0) << "reading noise taken for a step";
  const int64_t forward = 3600'000'000'000 + int64_t(rng() % 1000);
  EXPECT_EQ(w.step(anchor + forward, t), forward);
  EXPECT_EQ(w.step(anchor + forward, t), 0) << "a step is reported once";
  EXPECT_EQ(w.step(anchor + forward + WallClockWatch::kToleranceNs, t), 0);
  EXPECT_EQ(w.step(anchor + forward - 2'500'000'000, t), -2'500'000'000) << "back, from the new anchor";
  EXPECT_EQ(w.step(anchor + forward - 2'500'000'000 - WallClockWatch::kStepNs, t), -WallClockWatch::kStepNs)
      << "a step of kStepNs is followed at once";
}

TEST(WallClockWatch, ASmallMoveIsFollowedOnlyOnceItHasLastedTheSettleTime) {
  const int64_t anchor = 1'795'000'000'123'456'789;
  const int64_t t0 = 5'000'000'000;
  WallClockWatch w;
  w.anchor(anchor);
  const int64_t small = WallClockWatch::kToleranceNs + 1;
  EXPECT_EQ(w.step(anchor - small, t0), 0) << "just beyond the tolerance: not yet";
  EXPECT_EQ(w.step(anchor - small, t0 + WallClockWatch::kSettleNs - 1), 0);
  EXPECT_EQ(w.step(anchor - small, t0 + WallClockWatch::kSettleNs), -small) << "lasted the settle time";
  EXPECT_EQ(w.step(anchor - small, t0 + 2 * WallClockWatch::kSettleNs), 0) << "the new anchor";

  // A move that comes back within the tolerance starts the wait anew.
  WallClockWatch back;
  back.anchor(anchor);
  EXPECT_EQ(back.step(anchor + 50'000'000, t0), 0);
  EXPECT_EQ(back.step(anchor + 500'000, t0 + WallClockWatch::kSettleNs / 2), 0);
  EXPECT_EQ(back.step(anchor + 50'000'000, t0 + WallClockWatch::kSettleNs), 0) << "the wait began again";
  EXPECT_EQ(back.step(anchor + 50'000'000, t0 + 2 * WallClockWatch::kSettleNs - 1), 0);
  EXPECT_EQ(back.step(anchor + 50'000'000, t0 + 2 * WallClockWatch::kSettleNs), 50'000'000);
}

TEST(WallClockWatch, AClockNudgedAMillisecondAtATimeBreaksTheTimeLineOnlyEverySettleTime) {
  // As a virtual machine's time agent did on a CI guest: +1 ms every 200 ms. Each look (every
  // millisecond) sees the difference so far; the time line follows it in one move per settle time
  // and never lags the wall clock by more than that time's worth.
  WallClockWatch w;
  const int64_t anchor = 1'795'000'000'000'000'000;
  w.anchor(anchor);
  int64_t followed = 0, steps = 0, worst_lag = 0;
  for (int64_t t = 0; t < 32'000'000'000; t += WallClockWatch::kIntervalNs) {
    const int64_t moved = (t / 200'000'000) * 1'000'000;
    if (const int64_t s = w.step(anchor + moved, t)) {
      followed += s;
      ++steps;
    }
    worst_lag = std::max(worst_lag, moved - followed);
  }
  // Beyond the tolerance at 0.4 s (2 ms), followed 10 s later (52 ms); again at 10.8 s, followed
  // at 20.8 s (104 ms); at 21.2 s, followed at 31.2 s (156 ms).
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(followed, 156'000'000);
  EXPECT_EQ(worst_lag, 51'000'000) << "the settle time's nudges, less the one before it began";
}

TEST(WallClockWatch, TheDifferenceOfTheClocksIsReadToWellWithinTheTolerance) {
  // With no step in between, two readings differ by reading noise only (they bracket the
  // realtime read between two monotonic ones).
  int64_t widest = 0;
  for (int i = 0; i < 2000; ++i) {
    const int64_t a = utc_minus_mono_ns(), b = utc_minus_mono_ns();
    widest = std::max<int64_t>(widest, std::llabs(a - b));
  }
  EXPECT_LT(widest, WallClockWatch::kToleranceNs);
  EXPECT_NEAR(double(utc_minus_mono_ns()), double(utc_now_ns() - mono_now_ns()), 1e6);
}

TEST(WallClockWatch, AChunkAfterAStepIsFlaggedAndItsTimeLineMoved) {
  WallClockWatch w;
  const int64_t offset = utc_minus_mono_ns();
  int64_t start_utc = 1'795'000'000'000'000'000;
  w.anchor(offset);
  ChunkHeader h;
  const int64_t t = mono_now_ns();
  follow_wall_clock(w, t, start_utc, h);  // the real clocks: no step since the anchor just now
  EXPECT_EQ(h.flags & chunk_flags::kClockStepped, 0u);
  EXPECT_EQ(h.clock_step_ns, 0);
  EXPECT_EQ(start_utc, 1'795'000'000'000'000'000);
  w.anchor(offset - 7'000'000'000);  // as if the clock had been set 7 s forward since
  follow_wall_clock(w, t + WallClockWatch::kIntervalNs - 1, start_utc, h);
  EXPECT_EQ(h.flags & chunk_flags::kClockStepped, 0u) << "looked again within the interval";
  follow_wall_clock(w, t + WallClockWatch::kIntervalNs, start_utc, h);
  EXPECT_NE(h.flags & chunk_flags::kClockStepped, 0u);
  EXPECT_NEAR(double(h.clock_step_ns), 7e9, 1e6);
  EXPECT_EQ(start_utc, 1'795'000'000'000'000'000 + h.clock_step_ns);
}

}  // namespace
}  // namespace vigil
