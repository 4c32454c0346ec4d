// Weighted sums of rows, the inner loop of the direct-form FIR and of the DWT's polyphase form:
// out[i] = sum over t < taps of w[t] * row_t[i], for i < n. Every output sums its products in tap
// order with separate multiplies and adds (no FMA: ISO C++ mode keeps -ffp-contract=off), so the
// result is the same to the bit whatever the vector width or where a block of outputs ends.
//
// Why a module of its own: the sums were written as two or four 4-float accumulators, and each
// accumulator waits on its own last add (about 4 cycles on current x86 and Arm cores), so a tap
// took 4 cycles however few instructions it had. Eight independent accumulators fill that wait. On
// x86-64 CPUs with AVX2 they are 8 floats wide (a build with target("avx2") beside the portable
// one, picked once at run time: VIGIL_SIMD_CLONES builds one source for every target, and these
// loops need a different vector width per target); elsewhere (SSE2, NEON) 4 wide. No intrinsics:
// GCC/Clang vector types.
#pragma once

#include <cstddef>

namespace vigil::row_sums {

// Rows given by pointers: row t is rows[t][0, n).
void sum(const float* w, const float* const* rows, size_t taps, size_t n, float* out) noexcept;
// Two weightings of the same rows at once (the DWT analysis' low and high pass): each row is read
// once for both.
void sum2(const float* w1, const float* w2, const float* const* rows, size_t taps, size_t n, float* out1,
          float* out2) noexcept;
// Sliding rows: row t is x + t (the direct-form FIR: out[i] = sum_t w[t] x[i + t]).
void sliding(const float* w, const float* x, size_t taps, size_t n, float* out) noexcept;

// Whether the 8-wide build runs on this CPU; the portable forms, for tests that compare the two.
bool wide() noexcept;
void sum_portable(const float* w, const float* const* rows, size_t taps, size_t n, float* out) noexcept;
void sum2_portable(const float* w1, const float* w2, const float* const* rows, size_t taps, size_t n, float* out1,
                   float* out2) noexcept;
void sliding_portable(const float* w, const float* x, size_t taps, size_t n, float* out) noexcept;

}  // namespace vigil::row_sums
