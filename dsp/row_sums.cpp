#include "dsp/row_sums.hpp"

#include "dsp/simd.hpp"

#include <cstring>

namespace vigil::row_sums {
namespace {

using v4 = simd::v4f;
typedef float v8 __attribute__((vector_size(32)));

struct Pointers {
  const float* const* rows;
  const float* operator()(size_t t) const noexcept { return rows[t]; }
};
struct Sliding {
  const float* x;
  const float* operator()(size_t t) const noexcept { return x + t; }
};

// kAcc vectors of V: kAcc * lanes outputs a step while the taps stream past; then one vector a
// step; then one output at a time. Always inlined, so that each caller's instruction set applies.
template <class V, int kAcc, class Rows>
__attribute__((always_inline)) inline void sums(const float* w, Rows rows, size_t taps, size_t n, float* out) noexcept {
  constexpr size_t kLanes = sizeof(V) / sizeof(float), kStep = kAcc * kLanes;
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    V a[kAcc];
#pragma GCC unroll 16
    for (size_t q = 0; q < size_t(kAcc); ++q) a[q] = V{};
    for (size_t t = 0; t < taps; ++t) {
      const float* r = rows(t) + i;
      const float h = w[t];
#pragma GCC unroll 16
      for (size_t q = 0; q < size_t(kAcc); ++q) {
        V x;
        std::memcpy(&x, r + q * kLanes, sizeof x);
        a[q] += h * x;
      }
    }
#pragma GCC unroll 16
    for (size_t q = 0; q < size_t(kAcc); ++q) std::memcpy(out + i + q * kLanes, &a[q], sizeof(V));
  }
  for (; i + kLanes <= n; i += kLanes) {
    V a = {};
    for (size_t t = 0; t < taps; ++t) {
      V x;
      std::memcpy(&x, rows(t) + i, sizeof x);
      a += w[t] * x;
    }
    std::memcpy(out + i, &a, sizeof a);
  }
  for (; i < n; ++i) {
    float a = 0.0f;
    for (size_t t = 0; t < taps; ++t) a += w[t] * rows(t)[i];
    out[i] = a;
  }
}

// Two weightings: kAcc vectors each.
template <class V, int kAcc>
__attribute__((always_inline)) inline void sums2(const float* w1, const float* w2, const float* const* rows, size_t taps,
                                                 size_t n, float* out1, float* out2) noexcept {
  constexpr size_t kLanes = sizeof(V) / sizeof(float), kStep = kAcc * kLanes;
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    V a[kAcc], b[kAcc];
#pragma GCC unroll 16
    for (size_t q = 0; q < size_t(kAcc); ++q) a[q] = b[q] = V{};
    for (size_t t = 0; t < taps; ++t) {
      const float* r = rows[t] + i;
      const float h1 = w1[t], h2 = w2[t];
#pragma GCC unroll 16
      for (size_t q = 0; q < size_t(kAcc); ++q) {
        V x;
        std::memcpy(&x, r + q * kLanes, sizeof x);
        a[q] += h1 * x;
        b[q] += h2 * x;
      }
    }
#pragma GCC unroll 16
    for (size_t q = 0; q < size_t(kAcc); ++q) {
      std::memcpy(out1 + i + q * kLanes, &a[q], sizeof(V));
      std::memcpy(out2 + i + q * kLanes, &b[q], sizeof(V));
    }
  }
  for (; i + kLanes <= n; i += kLanes) {
    V a = {}, b = {};
    for (size_t t = 0; t < taps; ++t) {
      V x;
      std::memcpy(&x, rows[t] + i, sizeof x);
      a += w1[t] * x;
      b += w2[t] * x;
    }
    std::memcpy(out1 + i, &a, sizeof a);
    std::memcpy(out2 + i, &b, sizeof b);
  }
  for (; i < n; ++i) {
    float a = 0.0f, b = 0.0f;
    for (size_t t = 0; t < taps; ++t) {
      a += w1[t] * rows[t][i];
      b += w2[t] * rows[t][i];
    }
    out1[i] = a;
    out2[i] = b;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VIGIL_ROW_SUMS_WIDE 1
__attribute__((target("avx2"))) void sum_wide(const float* w, const float* const* rows, size_t taps, size_t n,
                                               float* out) noexcept {
  sums<v8, 8>(w, Pointers{rows}, taps, n, out);
}
__attribute__((target("avx2"))) void sum2_wide(const float* w1, const float* w2, const float* const* rows, size_t taps,
                                                size_t n, float* out1, float* out2) noexcept {
  sums2<v8, 4>(w1, w2, rows, taps, n, out1, out2);
}
__attribute__((target("avx2"))) void sliding_wide(const float* w, const float* x, size_t taps, size_t n,
                                                   float* out) noexcept {
  sums<v8, 8>(w, Sliding{x}, taps, n, out);
}
#endif

}  // namespace

bool wide() noexcept {
#ifdef VIGIL_ROW_SUMS_WIDE
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

void sum_portable(const float* w, const float* const* rows, size_t taps, size_t n, float* out) noexcept {
  sums<v4, 8>(w, Pointers{rows}, taps, n, out);
}

void sum2_portable(const float* w1, const float* w2, const float* const* rows, size_t taps, size_t n, float* out1,
                   float* out2) noexcept {
  sums2<v4, 4>(w1, w2, rows, taps, n, out1, out2);
}

void sliding_portable(const float* w, const float* x, size_t taps, size_t n, float* out) noexcept {
  sums<v4, 8>(w, Sliding{x}, taps, n, out);
}

void sum(const float* w, const float* const* rows, size_t taps, size_t n, float* out) noexcept {
#ifdef VIGIL_ROW_SUMS_WIDE
  if (wide()) return sum_wide(w, rows, taps, n, out);
#endif
  sum_portable(w, rows, taps, n, out);
}

void sum2(const float* w1, const float* w2, const float* const* rows, size_t taps, size_t n, float* out1,
          float* out2) noexcept {
#ifdef VIGIL_ROW_SUMS_WIDE
  if (wide()) return sum2_wide(w1, w2, rows, taps, n, out1, out2);
#endif
  sum2_portable(w1, w2, rows, taps, n, out1, out2);
}

void sliding(const float* w, const float* x, size_t taps, size_t n, float* out) noexcept {
#ifdef VIGIL_ROW_SUMS_WIDE
  if (wide()) return sliding_wide(w, x, taps, n, out);
#endif
  sliding_portable(w, x, taps, n, out);
}

}  // namespace vigil::row_sums
