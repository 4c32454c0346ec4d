// Comparisons of AE results from two engines that make the same decisions but may add their double
// sums in another order (the CUDA engine against its CPU twin): every decision field exactly, the
// sums within `sum_rel` relative.
#pragma once

#include <gtest/gtest.h>

#include "dsp/ae_hit_detector.hpp"

namespace vigil::test {

// Everything after the arrival (the caller asserts lane and arrival first, to stop at the first
// misaligned hit).
inline void expect_same_hit_after_arrival(const AeHit& g, const AeHit& w, double sum_rel) {
  EXPECT_EQ(g.peak_frame, w.peak_frame);
  EXPECT_EQ(g.end_frame, w.end_frame);
  EXPECT_EQ(g.peak, w.peak);
  EXPECT_EQ(g.threshold, w.threshold);
  EXPECT_EQ(g.counts, w.counts);
  EXPECT_EQ(g.counts_to_peak, w.counts_to_peak);
  EXPECT_EQ(g.truncated, w.truncated);
  EXPECT_NEAR(g.sum_sq, w.sum_sq, sum_rel * w.sum_sq);
  EXPECT_NEAR(g.sum_abs, w.sum_abs, sum_rel * w.sum_abs);
}

// A level interval's end, length and sums (the caller compares the lane its way).
inline void expect_same_level(const AeLevel& g, const AeLevel& w, double sum_rel) {
  EXPECT_EQ(g.end_frame, w.end_frame);
  EXPECT_EQ(g.samples, w.samples);
  EXPECT_NEAR(g.sum_sq, w.sum_sq, sum_rel * w.sum_sq);
  EXPECT_NEAR(g.sum_abs, w.sum_abs, sum_rel * w.sum_abs);
}

}  // namespace vigil::test
