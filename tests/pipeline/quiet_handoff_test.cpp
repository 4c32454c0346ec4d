// QuietHandoff: when the pipeline thread hands a chunk to the output thread without waking it.
#include "pipeline/quiet_handoff.hpp"

#include <gtest/gtest.h>

namespace vigil {
namespace {

constexpr int64_t kUs = 1000;

TEST(QuietHandoff, WakesAtOnceWhenNoOtherChunkWaits) {
  QuietHandoff h(8);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(h.quiet(i * 20 * kUs, 12 * kUs, false));
  EXPECT_EQ(h.pending(), 0u);
}

TEST(QuietHandoff, BatchesShortChunksWhileInputWaitsUpToItsBudget) {
  QuietHandoff h(16);
  // 12 us chunks back to back: quiet while the first quiet chunk's wait, plus the next chunk's
  // estimated 12 us, stays within 100 us: at 0, 12, ..., 84 us (84 + 12 = 96); then loud.
  int64_t t = 0;
  int quiet = 0;
  while (h.quiet(t, 12 * kUs, true)) {
    ++quiet;
    t += 12 * kUs;
  }
  EXPECT_EQ(quiet, 8);
  EXPECT_EQ(t, 96 * kUs);
  EXPECT_EQ(h.pending(), 0u);
  EXPECT_TRUE(h.quiet(t + 12 * kUs, 12 * kUs, true)) << "a new batch starts after the wake";
}

TEST(QuietHandoff, StopsAtItsChunkLimit) {
  QuietHandoff h(3);
  EXPECT_TRUE(h.quiet(0, 1 * kUs, true));
  EXPECT_TRUE(h.quiet(1 * kUs, 1 * kUs, true));
  EXPECT_TRUE(h.quiet(2 * kUs, 1 * kUs, true));
  EXPECT_EQ(h.pending(), 3u);
  EXPECT_FALSE(h.quiet(3 * kUs, 1 * kUs, true));
}

TEST(QuietHandoff, NeverHoldsBackAChunkThatTookLongerThanTheBudget) {
  QuietHandoff h(8);
  EXPECT_FALSE(h.quiet(0, 101 * kUs, true));  // S1-sized chunks: every hand-off wakes
  EXPECT_TRUE(h.quiet(200 * kUs, 60 * kUs, true));
  EXPECT_FALSE(h.quiet(260 * kUs, 60 * kUs, true)) << "the first quiet chunk would wait 120 us";
}

TEST(QuietHandoff, AWakeElsewhereStartsANewBatch) {
  QuietHandoff h(8);
  EXPECT_TRUE(h.quiet(0, 40 * kUs, true));
  EXPECT_EQ(h.pending(), 1u);
  h.woken();
  EXPECT_EQ(h.pending(), 0u);
  EXPECT_TRUE(h.quiet(90 * kUs, 40 * kUs, true)) << "90 us after the first, but that one was woken";
}

}  // namespace
}  // namespace vigil
