// Device functions of the periodized DWT inside one thread block, shared by the whole-signal fused
// kernels (wavelet.cu) and the batched streaming denoiser (streaming_denoise.cu). Every thread of
// the block calls the level loops; the arrays may be in shared or global memory. CUDA sources only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/wavelet.cuh"

namespace vigil::cuda {

__device__ __forceinline__ int wavelet_wrap(long v, long m) {
  const long r = v % m;
  return int(r < 0 ? r + m : r);
}

// v mod m for the in-block loops: most taps land inside [0, m) and the edges one
// period off, so the 64-bit modulo above is left to signals shorter than the filter.
__device__ __forceinline__ int wrap_in_block(int v, int m) {
  if (unsigned(v) < unsigned(m)) return v;
  const int w = v < 0 ? v + m : v - m;
  return unsigned(w) < unsigned(m) ? w : wavelet_wrap(v, m);
}

// Analysis output i of a level over cur[0, m): {approximation, detail}. kLen: 0 for any filter
// (f.len taps, every index wrapped); a multiple of 4 (f.len must equal it) unrolls the taps for
// the outputs whose taps lie inside the period, their inputs read two at a time (cur 8-byte
// aligned), with the same multiply-adds in the same order: the same result to the bit. S1's db8
// (16 taps) takes it.
// kHalo: cur has a periodic halo of 8 on both sides (cur[-8, 0) and cur[m, m + 8) are copies of its
// other end; LevelLayout), so the unrolled taps serve the edge outputs too.
template <int kLen, bool kHalo = false>
__device__ __forceinline__ float2 analysis_output(const WaveletFilters& f, const float* cur, uint32_t m, uint32_t i) {
  static_assert(kLen % 4 == 0, "the unrolled taps need an even half length");
  static_assert(!kHalo || kLen == 16, "the halo is sized for 16 taps");
  const int len = kLen ? kLen : f.len, s = len / 2;
  // Output i's taps read cur[2i + s - k], k < len: from 2i - s + 1 up to 2i + s, that is the
  // pairs starting at 2i - s (s even), kPairs of them.
  constexpr int kPairs = kLen / 2 + 1;
  float lo = 0.0f, hi = 0.0f;
  const int e0 = int(2 * i) - s;
  if (kLen && (kHalo || (e0 >= 0 && e0 + 2 * kPairs <= int(m)))) {
    float v[2 * kPairs];
    const float2* pairs = reinterpret_cast<const float2*>(cur + e0);
#pragma unroll
    for (int q = 0; q < kPairs; ++q) {
      const float2 w = pairs[q];
      v[2 * q] = w.x;
      v[2 * q + 1] = w.y;
    }
#pragma unroll
    for (int k = 0; k < kLen; ++k) {  // cur[2i + s - k] = v[2s - k]
      lo = fmaf(f.lo[k], v[2 * s - k], lo);
      hi = fmaf(f.hi[k], v[2 * s - k], hi);
    }
  } else {
    for (int k = 0; k < len; ++k) {
      const float v = cur[wrap_in_block(int(2 * i) + s - k, int(m))];
      lo = fmaf(f.lo[k], v, lo);
      hi = fmaf(f.hi[k], v, hi);
    }
  }
  return make_float2(lo, hi);
}

// Synthesis output t of a level from the approximation cur[0, half) and the details cd[0, half),
// every index wrapped.
__device__ __forceinline__ float synthesis_output(const WaveletFilters& f, const float* cur, const float* cd,
                                                  uint32_t half, uint32_t t) {
  const int s = f.len / 2;
  float acc = 0.0f;
  for (int k = ((int(t) - s) & 1) ? 1 : 0; k < f.len; k += 2) {
    const int i = wrap_in_block((int(t) + k - s) / 2, int(half));
    acc = fmaf(f.lo[k], cur[i], acc);
    acc = fmaf(f.hi[k], cd[i], acc);
  }
  return acc;
}

// Synthesis outputs 2u and 2u + 1. kLen: as for the analysis; unrolled, both come from the same
// kLen/2 + 1 inputs of each half, with the multiply-adds of synthesis_output in its order. kHalo:
// cur and cd have periodic halos of at least 4 on both sides (LevelLayout), and the edges unroll too.
template <int kLen, bool kHalo = false>
__device__ __forceinline__ float2 synthesis_pair(const WaveletFilters& f, const float* cur, const float* cd,
                                                 uint32_t half, uint32_t u) {
  static_assert(kLen % 4 == 0, "the unrolled taps need an even half length");
  static_assert(!kHalo || kLen == 16, "the halo is sized for 16 taps");
  if (kLen) {
    // s even: output 2u takes the even taps k = 2q at index u - s/2 + q, output 2u + 1 the odd
    // ones at u - s/2 + 1 + q: both read [u - s/2, u - s/2 + kLen/2] of cur and cd.
    constexpr int kIn = kLen / 2 + 1, s = kLen / 2;
    const int i0 = int(u) - s / 2;
    if (kHalo || (i0 >= 0 && i0 + kIn <= int(half))) {
      float a[kIn], d[kIn];
#pragma unroll
      for (int q = 0; q < kIn; ++q) {
        a[q] = cur[i0 + q];
        d[q] = cd[i0 + q];
      }
      float even = 0.0f, odd = 0.0f;
#pragma unroll
      for (int q = 0; q < kLen / 2; ++q) {
        even = fmaf(f.lo[2 * q], a[q], even);
        even = fmaf(f.hi[2 * q], d[q], even);
        odd = fmaf(f.lo[2 * q + 1], a[q + 1], odd);
        odd = fmaf(f.hi[2 * q + 1], d[q + 1], odd);
      }
      return make_float2(even, odd);
    }
  }
  return make_float2(synthesis_output(f, cur, cd, half, 2 * u), synthesis_output(f, cur, cd, half, 2 * u + 1));
}

// The m samples in cur[0, m) go through `levels` analysis levels, using cur and other as ping-pong
// buffers (m floats each): the details of level j (1 = the first done here) go to
// coeffs + (m >> j), and the last approximation to coeffs[0, m >> levels). Ends synchronised.
__device__ __forceinline__ void analyse_levels_in_block(const WaveletFilters& f, float* cur, float* other, uint32_t m,
                                                        unsigned levels, float* coeffs) {
  for (unsigned j = 0; j < levels; ++j, m /= 2) {
    const uint32_t half = m / 2;
    for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
      const float2 r = analysis_output<0>(f, cur, m, i);
      other[i] = r.x;
      coeffs[half + i] = r.y;
    }
    __syncthreads();
    float* t = cur;
    cur = other;
    other = t;
  }
  for (uint32_t i = threadIdx.x; i < m; i += blockDim.x) coeffs[i] = cur[i];
  __syncthreads();
}

// The inverse: from the approximation in cur[0, m0) and the details at coeffs + (m0 << i), `levels`
// synthesis levels with cur and other as ping-pong buffers; the result (m0 << levels samples) is
// returned (one of the two buffers). Ends synchronised.
__device__ __forceinline__ float* synthesise_levels_in_block(const WaveletFilters& f, const float* coeffs, uint32_t m0,
                                                             unsigned levels, float* cur, float* other) {
  uint32_t half = m0;
  for (unsigned j = 0; j < levels; ++j, half *= 2) {
    for (uint32_t t = threadIdx.x; t < 2 * half; t += blockDim.x) other[t] = synthesis_output(f, cur, coeffs + half, half, t);
    __syncthreads();
    float* tmp = cur;
    cur = other;
    other = tmp;
  }
  return cur;
}

// Where a level's coefficients lie in one of the two buffers of a window's block (below). Tight
// (kHalo false): the approximation of length L at b[0, L), its details at b[L, 2L). Haloed: each
// region has a periodic halo on both sides (copies of its other end), so the unrolled 16-tap loops
// read the taps of the edge outputs straight too (the generic loop wrapped every index of them:
// about a fifth of S1's denoise instructions): [8 | approximation | 8] [4 | details | 4]. The halo
// layout needs L >= 8 at every level (the deepest approximation at least 8 samples): then a level
// written into a buffer ends before the details of the level two above it begin.
template <bool kHalo>
struct LevelLayout {
  static constexpr int kApproxHalo = kHalo ? 8 : 0;
  static constexpr int kDetailHalo = kHalo ? 4 : 0;
  static constexpr uint32_t kMinDeepest = kHalo ? 8 : 1;
  // Floats of each buffer for windows of n samples (even: the second buffer stays 8-byte aligned).
  __host__ __device__ static constexpr uint32_t buffer_floats(uint32_t n) {
    return n + 2 * kApproxHalo + 2 * kDetailHalo;
  }
  __device__ static float* approx(float* b) { return b + kApproxHalo; }
  __device__ static float* details(float* b, uint32_t len) { return b + len + 2 * kApproxHalo + kDetailHalo; }
};

// v, element i of a periodic region r[0, len), into its copies in the halos r[-kH, 0) and
// r[len, len + kH) (none for kH = 0; at most one each for len >= kH).
template <int kH>
__device__ __forceinline__ void store_halo(float* r, uint32_t len, uint32_t i, float v) {
  if (kH) {
    for (int p = int(i) - int(len); p >= -kH; p -= int(len)) r[p] = v;
    for (uint32_t p = i + len; p < len + kH; p += len) r[p] = v;
  }
}

// r[i] = v and its halo copies.
template <int kH>
__device__ __forceinline__ void store_periodic(float* r, uint32_t len, uint32_t i, float v) {
  r[i] = v;
  store_halo<kH>(r, len, i, v);
}

// The m samples at LevelLayout::approx(x)[0, m) (with their halo when kHalo) go through `levels`
// analysis levels with no copy between them: level j (1 = the first) reads level j - 1's
// approximation and writes its own approximation and details into buffer B_j, which is c for odd j
// and x for even j (B_0 = x holds the samples). Each buffer keeps the details of its levels, so two
// buffers of LevelLayout::buffer_floats(m) hold everything (c, x 8-byte aligned). Ends
// synchronised. kLen: as analysis_output's.
template <int kLen, bool kHalo>
__device__ __forceinline__ void analyse_levels_alternating(const WaveletFilters& f, float* x, float* c, uint32_t m,
                                                           unsigned levels) {
  using L = LevelLayout<kHalo>;
  for (unsigned j = 1; j <= levels; ++j, m /= 2) {
    const float* cur = L::approx(j & 1 ? x : c);  // B_{j-1}
    float* dst = j & 1 ? c : x;                   // B_j
    const uint32_t half = m / 2;
    float* a = L::approx(dst);
    float* d = L::details(dst, half);
    for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
      const float2 r = analysis_output<kLen, kHalo>(f, cur, m, i);
      store_periodic<L::kApproxHalo>(a, half, i, r.x);
      store_periodic<L::kDetailHalo>(d, half, i, r.y);
    }
    __syncthreads();
  }
}

// Its inverse: from that layout (the approximation in B_levels, each level's details in its own
// buffer) back to the n = m0 << levels samples at LevelLayout::approx(x)[0, n). Level j's synthesis
// reads B_j and writes B_{j-1}'s approximation (and halo), where only its consumed approximation
// was. Ends synchronised.
template <int kLen, bool kHalo>
__device__ __forceinline__ void synthesise_levels_alternating(const WaveletFilters& f, float* x, float* c, uint32_t m0,
                                                              unsigned levels) {
  using L = LevelLayout<kHalo>;
  uint32_t half = m0;
  for (unsigned j = levels; j >= 1; --j, half *= 2) {
    float* src = j & 1 ? c : x;  // B_j: approximation, then details
    const float* cur = L::approx(src);
    const float* cd = L::details(src, half);
    float* dst = L::approx(j & 1 ? x : c);  // B_{j-1}
    for (uint32_t u = threadIdx.x; u < half; u += blockDim.x) {
      const float2 r = synthesis_pair<kLen, kHalo>(f, cur, cd, half, u);
      reinterpret_cast<float2*>(dst)[u] = r;
      store_halo<L::kApproxHalo>(dst, 2 * half, 2 * u, r.x);
      store_halo<L::kApproxHalo>(dst, 2 * half, 2 * u + 1, r.y);
    }
    __syncthreads();
  }
}

}  // namespace vigil::cuda
