// DeviceClockOffset: the median of the last chunks' offsets follows a device's drift and ignores
// a few late wake-ups among them.
#include "acquisition/device_clock_offset.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace vigil {
namespace {

TEST(DeviceClockOffset, TheMedianFollowsTheDriftAndIgnoresLateChunks) {
  DeviceClockOffset o;
  EXPECT_EQ(o.median(), 0);
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<int64_t> jitter(-50'000, 50'000);  // +-50 us of reading noise
  // A device 50 ppm slow, chunks of 10 ms: its chunks arrive 0.5 us later each; one in ten
  // read 3 ms late (the reader was preempted).
  int64_t truth = 0;
  for (int k = 0; k < 1000; ++k) {
    truth = int64_t(k) * 500;
    o.add(truth + jitter(rng) + (k % 10 == 3 ? 3'000'000 : 0));
    if (k >= int(DeviceClockOffset::kChunks)) {
      ASSERT_NEAR(double(o.median()), double(truth), 60'000.0) << k;
    }
  }
  // Only the last kChunks count: a step in the offsets (a re-anchored device) is followed once
  // more than half of them lie past it.
  for (size_t k = 0; k < DeviceClockOffset::kChunks / 2; ++k) o.add(-20'000'000);
  EXPECT_GT(o.median(), 0);
  o.add(-20'000'000);
  EXPECT_EQ(o.median(), -20'000'000);
}

}  // namespace
}  // namespace vigil
