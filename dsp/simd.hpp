// 4-lane vectors through GCC/Clang vector extensions: SSE2 on every x86-64, NEON on every
// aarch64, no intrinsics. Unaligned loads and stores go through memcpy (one instruction each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

// A hot loop written as plain C++ that the vectoriser handles, built three times on x86-64: with
// AVX-512 (x86-64-v4), AVX2 (x86-64-v3) and the SSE2 baseline; the dynamic loader picks the best
// the CPU has (an ifunc). The default build stays portable (no -march), aarch64 builds once (NEON
// is its baseline). The clones compute each element with the same operations in the same order,
// so every clone gives the same result to the bit, only more elements at a time: the build passes
// -ffp-contract=off to every C++ compile (CMakeLists.txt), because GCC and clang otherwise fuse
// a*b+c into one FMA wherever the target has it (aarch64 always, the x86-64-v3/v4 clones), in
// some loops and not in others (docs/JETSON.md, "Same bits").
// GCC 11 (JetPack 6's compiler) has no dispatcher for arch= clones: it builds the portable loop
// once, as aarch64 does.
// Sanitizer builds take one build of each loop: an ifunc's resolver runs while the dynamic loader
// relocates, before the sanitizer's runtime is up (clang 14 + TSan: a segfault at start).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VIGIL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer) || \
    __has_feature(undefined_behavior_sanitizer)
#define VIGIL_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && defined(__ELF__) && !defined(VIGIL_SANITIZED) && (defined(__clang__) || __GNUC__ >= 12)
#define VIGIL_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VIGIL_SIMD_CLONES
#endif

namespace vigil::simd {

typedef float v4f __attribute__((vector_size(16)));

inline v4f load4(const float* p) noexcept {
  v4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store4(float* p, v4f v) noexcept { std::memcpy(p, &v, sizeof v); }

typedef uint32_t v4u __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

// Lanes of a and b by index (0-3: a's, 4-7: b's): one or two shuffle instructions on SSE2 and NEON.
template <int I0, int I1, int I2, int I3>
inline v4f shuffle(v4f a, v4f b) noexcept {
#if defined(__clang__)
  return __builtin_shufflevector(a, b, I0, I1, I2, I3);
#else
  return __builtin_shuffle(a, b, v4i{I0, I1, I2, I3});
#endif
}

// Four rows of four lanes to four columns: out[j] lane i = in[i] lane j.
inline void transpose4(v4f& r0, v4f& r1, v4f& r2, v4f& r3) noexcept {
  const v4f t0 = shuffle<0, 4, 1, 5>(r0, r1), t1 = shuffle<2, 6, 3, 7>(r0, r1);
  const v4f t2 = shuffle<0, 4, 1, 5>(r2, r3), t3 = shuffle<2, 6, 3, 7>(r2, r3);
  r0 = shuffle<0, 1, 4, 5>(t0, t2);
  r1 = shuffle<2, 3, 6, 7>(t0, t2);
  r2 = shuffle<0, 1, 4, 5>(t1, t3);
  r3 = shuffle<2, 3, 6, 7>(t1, t3);
}

// Lanes 0-1 and lanes 2-3 of v as two doubles each: NEON's fcvtl and fcvtl2 on aarch64 (GCC 11
// has no __builtin_shufflevector, and builds the generic form through the stack there); the
// generic form elsewhere (SSE2: one unpack and one cvtps2pd each).
typedef double v2d __attribute__((vector_size(16)));
#if defined(__aarch64__)
inline v2d low2_to_double(v4f v) noexcept { return v2d(vcvt_f64_f32(vget_low_f32(float32x4_t(v)))); }
inline v2d high2_to_double(v4f v) noexcept { return v2d(vcvt_high_f64_f32(float32x4_t(v))); }
#else
inline v2d low2_to_double(v4f v) noexcept { return v2d{double(v[0]), double(v[1])}; }
inline v2d high2_to_double(v4f v) noexcept { return v2d{double(v[2]), double(v[3])}; }
#endif

// Reverses the byte order of n 32-bit words from `in` to `out` (host <-> big-endian: VITA 49's
// samples). Four words per step by shifts and masks, which SSE2 and NEON both have; GCC 12 leaves
// the scalar loop (and __builtin_bswap32 in a loop) unvectorised: ~1 ns a word against ~0.2.
// in and out must not overlap.
inline void byteswap32(const void* in, void* out, size_t n) noexcept {
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    v4u v;
    std::memcpy(&v, src + 4 * i, sizeof v);
    v = (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
    std::memcpy(dst + 4 * i, &v, sizeof v);
  }
  for (; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, src + 4 * i, sizeof w);
    w = __builtin_bswap32(w);
    std::memcpy(dst + 4 * i, &w, sizeof w);
  }
}

}  // namespace vigil::simd
