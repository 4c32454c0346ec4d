// Pace: when a paced source's frames are due, the wait for them, and the chunks counted late.
#include "acquisition/pace.hpp"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(Pace, FramesAreDueAtTheRateTimesTheFactorFromTheStart) {
  Pace pace;
  pace.start(1'000'000'000, 48000, 1.0, 256);
  EXPECT_EQ(pace.due_ns(0), 1'000'000'000);
  EXPECT_EQ(pace.due_ns(48000), 2'000'000'000);
  EXPECT_EQ(pace.due_ns(256), 1'000'000'000 + 5'333'333);  // 256 / 48 kHz, truncated to the ns
  EXPECT_EQ(pace.period_ns(), 5'333'333);
  pace.start(7, 51200, 20.0, 1024);  // twenty times faster: 1 s of frames in 50 ms
  EXPECT_EQ(pace.due_ns(51200), 7 + 50'000'000);
  EXPECT_EQ(pace.period_ns(), 1'000'000);
}

TEST(Pace, WaitsUntilTheChunksLastFrameIsDue) {
  Pace pace;
  const int64_t t0 = mono_now_ns();
  pace.start(t0, 1000, 1.0, 5);  // 5 ms chunks
  pace.wait_for(5);
  EXPECT_GE(mono_now_ns(), t0 + 5'000'000);
  pace.wait_for(10);
  EXPECT_GE(mono_now_ns(), t0 + 10'000'000);
  EXPECT_EQ(pace.late_chunks(), 0u);
}

TEST(Pace, AChunkMoreThanOnePeriodLateIsCountedAndNotWaitedFor) {
  Pace pace;
  // Started 1 s ago at 1 kHz in 100-frame chunks: frame 100 was due 0.9 s ago, nine periods back.
  pace.start(mono_now_ns() - 1'000'000'000, 1000, 1.0, 100);
  const int64_t before = mono_now_ns();
  pace.wait_for(100);
  EXPECT_EQ(pace.late_chunks(), 1u);
  // Frame 980 was due 20 ms ago, within one period (100 ms): waited for (at once), not late.
  pace.wait_for(980);
  EXPECT_EQ(pace.late_chunks(), 1u);
  EXPECT_LT(mono_now_ns() - before, 1'000'000'000);  // neither call slept toward a time long past
}

}  // namespace
}  // namespace vigil
