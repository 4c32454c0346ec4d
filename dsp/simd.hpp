// 4-float vectors through GCC/Clang vector extensions: SSE2 on every x86-64, NEON on every
// aarch64, no intrinsics. Unaligned loads and stores go through memcpy (one instruction each).
#pragma once

#include <cstring>

namespace vigil::simd {

typedef float v4f __attribute__((vector_size(16)));

inline v4f load4(const float* p) noexcept {
  v4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store4(float* p, v4f v) noexcept { std::memcpy(p, &v, sizeof v); }

}  // namespace vigil::simd
