// Moments: count, mean, central sums M2..M4, min and max of a run of samples, mergeable, so a
// sliding window's statistics can be built from the summaries of the segments it spans instead
// of going over every sample once per window it lies in (with windows overlapping by half, each
// sample was read four times: two windows, two passes); moments_of() reads each sample once.
// Merging: Pébay, "Formulas for robust, one-pass parallel computation of covariances and
// arbitrary-order statistical moments" (Sandia SAND2008-6212), eqs. 3.1 / 2.1.
#pragma once

#include <cstddef>

#include "dsp/vibration_stats.hpp"

namespace vigil {

struct Moments {
  double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;  // m_k: sum of (x - mean)^k
  float lo = 0, hi = 0;                             // meaningful when n > 0
};

// The moments of a's samples followed by b's (either may be empty).
Moments merge(const Moments& a, const Moments& b) noexcept;

// RMS, peak, peak-to-peak, crest factor and kurtosis as vibration_stats() defines them; n > 0.
VibrationStats stats_of(const Moments& m) noexcept;

// The moments of x[0..n), n >= 1, in one pass: power sums of x - x[0] in double (independent
// partial sums, so it vectorises), turned into central sums. The shift x[0] lies within the run's
// range, so the conversion loses at most about log10((range / sd)^4) digits of the 16 that double
// carries, whatever the DC offset; runs of one chunk keep that range local.
Moments moments_of(const float* x, size_t n) noexcept;

namespace detail {
// The two forms of moments_of() (the same sums in another order; tested against each other and a
// reference): wide, eight samples a step in four-double vectors, which x86-64 builds per
// instruction set (AVX2/AVX-512 where the CPU has them) and takes; narrow, four samples a step in
// two-double vectors, the form for 128-bit NEON (aarch64) and SSE2.
Moments moments_of_wide(const float* x, size_t n) noexcept;
Moments moments_of_narrow(const float* x, size_t n) noexcept;
}  // namespace detail

}  // namespace vigil
