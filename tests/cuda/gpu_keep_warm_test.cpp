// GpuKeepWarm: a round queued only once the interval has passed and the last round is done, and
// each queued round really run on the device (its count copied back). Skips with the reason when
// no GPU is present.
#include "cuda/gpu_keep_warm.hpp"

#include <gtest/gtest.h>

#include "core/clock.hpp"
#include "../support/gpu.hpp"

namespace vigil {
namespace {

// Pings until the last queued round has run on the device (its count copied back), or 2 s.
bool wait_until_run(const cuda::GpuKeepWarm& warm) {
  const int64_t until = mono_now_ns() + 2'000'000'000;
  while (warm.rounds_run_on_device() != warm.rounds())
    if (mono_now_ns() > until) return false;
  return true;
}

TEST(GpuKeepWarm, QueuesARoundEachIntervalThatTheDeviceRuns) {
  VIGIL_SKIP_WITHOUT_GPU();
  cuda::GpuKeepWarm warm(1'000'000);  // 1 ms
  EXPECT_EQ(warm.rounds(), 0u);
  int64_t t = 5'000'000'000;  // any clock: ping() compares the times it is given
  ASSERT_TRUE(warm.ping(t));
  EXPECT_EQ(warm.rounds(), 1u);
  ASSERT_TRUE(wait_until_run(warm));
  EXPECT_EQ(warm.rounds_run_on_device(), 1u);
  // Within the interval: nothing more, however often it is asked.
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(warm.ping(t + 999'999));
  EXPECT_EQ(warm.rounds(), 1u);
  // Each interval later, one round each (queued at the first ping that finds the round before it
  // finished: its count can reach the host a moment before its stream reads as done), every one
  // run on the device.
  for (uint32_t k = 2; k <= 20; ++k) {
    t += 1'000'000;
    const int64_t until = mono_now_ns() + 2'000'000'000;
    while (warm.rounds() < k && mono_now_ns() < until) ASSERT_TRUE(warm.ping(t));
    ASSERT_TRUE(wait_until_run(warm)) << "round " << k;
    EXPECT_EQ(warm.rounds(), k);
    EXPECT_EQ(warm.rounds_run_on_device(), k);
  }
  EXPECT_EQ(warm.errors(), 0u);
}

// A round still running when the next is due is not joined by another: rounds never pile up
// behind a busy or stalled GPU. Each round's copy out is its end, so the device's count can lag
// the queued count by the one round in flight and never by more.
TEST(GpuKeepWarm, NoRoundIsQueuedBehindOneStillRunning) {
  VIGIL_SKIP_WITHOUT_GPU();
  cuda::GpuKeepWarm warm(1'000);  // 1 us: due at every ping below
  ASSERT_TRUE(warm.ping(1'000'000));
  ASSERT_TRUE(wait_until_run(warm));
  // Ping as fast as possible for 50 ms: a round is only queued once the one before has finished,
  // so the queued count can never run more than one ahead of the device's.
  const int64_t until = mono_now_ns() + 50'000'000;
  uint64_t most_ahead = 0;
  for (int64_t t = 2'000'000; mono_now_ns() < until; t += 1'000) {
    ASSERT_TRUE(warm.ping(t));
    const uint64_t ahead = warm.rounds() - warm.rounds_run_on_device();
    most_ahead = ahead > most_ahead ? ahead : most_ahead;
  }
  EXPECT_LE(most_ahead, 1u);
  EXPECT_GT(warm.rounds(), 10u) << "rounds were due at every ping";
  ASSERT_TRUE(wait_until_run(warm));
}

}  // namespace
}  // namespace vigil
