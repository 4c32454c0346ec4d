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
  WallClockWatch w;
  w.anchor(anchor);
  std::uniform_int_distribution<int64_t> noise(-WallClockWatch::kToleranceNs, WallClockWatch::kToleranceNs);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(w.step(anchor + noise(rng)), 0) << "reading noise taken for a step";
  const int64_t forward = 3600'000'000'000 + int64_t(rng() % 1000);
  EXPECT_EQ(w.step(anchor + forward), forward);
  EXPECT_EQ(w.step(anchor + forward), 0) << "a step is reported once";
  EXPECT_EQ(w.step(anchor + forward + WallClockWatch::kToleranceNs), 0);
  EXPECT_EQ(w.step(anchor + forward - 2'500'000'000), -2'500'000'000) << "back, from the new anchor";
  EXPECT_EQ(w.step(anchor + forward - 2'500'000'000 - WallClockWatch::kToleranceNs - 1),
            -WallClockWatch::kToleranceNs - 1);
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
