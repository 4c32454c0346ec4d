// Device functions of the periodized DWT inside one thread block, shared by the whole-signal fused
// kernels (wavelet.cu) and the batched streaming denoiser (streaming_denoise.cu). Every thread of
// the block calls them; the arrays may be in shared or global memory. CUDA sources only.
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

// The m samples in cur[0, m) go through `levels` analysis levels, using cur and other as ping-pong
// buffers (m floats each): the details of level j (1 = the first done here) go to
// coeffs + (m >> j), and the last approximation to coeffs[0, m >> levels). Ends synchronised.
__device__ __forceinline__ void analyse_levels_in_block(const WaveletFilters& f, float* cur, float* other, uint32_t m,
                                                        unsigned levels, float* coeffs) {
  const int len = f.len, s = len / 2;
  for (unsigned j = 0; j < levels; ++j, m /= 2) {
    const uint32_t half = m / 2;
    for (uint32_t i = threadIdx.x; i < half; i += blockDim.x) {
      float lo = 0.0f, hi = 0.0f;
      for (int k = 0; k < len; ++k) {
        const float v = cur[wrap_in_block(int(2 * i) + s - k, int(m))];
        lo = fmaf(f.lo[k], v, lo);
        hi = fmaf(f.hi[k], v, hi);
      }
      other[i] = lo;
      coeffs[half + i] = hi;
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
  const int len = f.len, s = len / 2;
  uint32_t half = m0;
  for (unsigned j = 0; j < levels; ++j, half *= 2) {
    const uint32_t m = 2 * half;
    const float* cd = coeffs + half;
    for (uint32_t t = threadIdx.x; t < m; t += blockDim.x) {
      float acc = 0.0f;
      for (int k = ((int(t) - s) & 1) ? 1 : 0; k < len; k += 2) {
        const int i = wrap_in_block((int(t) + k - s) / 2, int(half));
        acc = fmaf(f.lo[k], cur[i], acc);
        acc = fmaf(f.hi[k], cd[i], acc);
      }
      other[t] = acc;
    }
    __syncthreads();
    float* tmp = cur;
    cur = other;
    other = tmp;
  }
  return cur;
}

}  // namespace vigil::cuda
