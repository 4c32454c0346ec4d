#include "cuda/convolve_direct.cuh"

#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

// Block b computes outputs [b * tile, (b + 1) * tile), tile = blockDim.x * R. Shared: the taps, then the inputs
// x[i0 - (m - 1) .. i0 + tile - 1] (zero outside [0, n)). Thread t owns outputs
// i0 + t * R + r, r < R; with base = t * R + m - 1, y[r] = sum_k h[k] * xs[base + r - k].
// The window win[r] = xs[base + r - k] slides down by one per tap: one new shared load per k.
__global__ void convolve_full_tiled_kernel(const float* __restrict__ x, long long n, const float* __restrict__ h,
                                           int m, float* __restrict__ y, long long n_out) {
  constexpr int R = int(kConvolvePerThread);
  extern __shared__ float smem[];
  float* hs = smem;
  float* xs = smem + m;
  const int tile = int(blockDim.x) * R;
  const long long i0 = (long long)blockIdx.x * tile;
  // The tile loads: unrolled so that several global loads are in flight per thread (with few
  // threads per block, one load at a time would leave the block waiting on each in turn).
#pragma unroll 8
  for (int j = threadIdx.x; j < m; j += blockDim.x) hs[j] = __ldg(h + j);
  const int span = tile + m - 1;
#pragma unroll 8
  for (int j = threadIdx.x; j < span; j += blockDim.x) {
    const long long src = i0 - (m - 1) + j;
    xs[j] = (src >= 0 && src < n) ? __ldg(x + src) : 0.0f;
  }
  __syncthreads();
  const int base = int(threadIdx.x) * R + m - 1;
  float acc[R], win[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    acc[r] = 0.0f;
    win[r] = xs[base + r];
  }
  int k = 0;
  // Groups of R taps: first every load of the group (R taps, broadcast; the R inputs that enter
  // the window, one per tap, distinct banks), all in flight at once, then R x R multiply-adds
  // in which the window's shift is a renaming of registers. An index below 0 (only past the
  // last tap, value unused) is clamped to stay in the buffer.
  for (; k + R <= m; k += R) {
    float hk[R], enter[R];
#pragma unroll
    for (int u = 0; u < R; ++u) {
      hk[u] = hs[k + u];
      enter[u] = xs[max(base - k - u - 1, 0)];
    }
#pragma unroll
    for (int u = 0; u < R; ++u) {
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r] = fmaf(hk[u], win[r], acc[r]);
#pragma unroll
      for (int r = R - 1; r > 0; --r) win[r] = win[r - 1];
      win[0] = enter[u];
    }
  }
  for (; k < m; ++k) {
    const float hk = hs[k];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = fmaf(hk, win[r], acc[r]);
#pragma unroll
    for (int r = R - 1; r > 0; --r) win[r] = win[r - 1];
    if (k + 1 < m) win[0] = xs[base - k - 1];
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long i = i0 + (long long)threadIdx.x * R + r;
    if (i < n_out) y[i] = acc[r];
  }
}

__global__ void convolve_full_naive_kernel(const float* __restrict__ x, long long n, const float* __restrict__ h,
                                           int m, float* __restrict__ y, long long n_out) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_out) return;
  float acc = 0.0f;
  for (int k = 0; k < m; ++k) {
    const long long j = i - k;
    if (j >= 0 && j < n) acc = fmaf(h[k], x[j], acc);
  }
  y[i] = acc;
}

}  // namespace

cudaError_t launch_convolve_full_tiled(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept {
  if (n < 1 || m < 1 || m > kConvolveMaxTaps) return cudaErrorInvalidValue;
  const long long n_out = (long long)(n + m - 1);
  // Every thread runs through all m taps, so the time is per-thread work unless the SMs are
  // short of blocks: small inputs get small blocks to spread over every SM (2 blocks per SM).
  static const int sms = [] {
    int dev = 0, count = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      count = 1;
    return count;
  }();
  uint32_t threads = kConvolveThreads;
  while (threads > 32 && (n_out + threads * kConvolvePerThread - 1) / (threads * kConvolvePerThread) < 2LL * sms)
    threads /= 2;
  const uint32_t tile = threads * kConvolvePerThread;
  const unsigned blocks = unsigned((n_out + tile - 1) / tile);
  const size_t shared = (size_t(m) + tile + m - 1) * sizeof(float);
  convolve_full_tiled_kernel<<<blocks, threads, shared, stream>>>(d_x, (long long)n, d_h, int(m), d_y, n_out);
  return after_launch(stream);
}

cudaError_t launch_convolve_full_naive(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept {
  if (n < 1 || m < 1) return cudaErrorInvalidValue;
  const long long n_out = (long long)(n + m - 1);
  const unsigned blocks = unsigned((n_out + 255) / 256);
  convolve_full_naive_kernel<<<blocks, 256, 0, stream>>>(d_x, (long long)n, d_h, int(m), d_y, n_out);
  return after_launch(stream);
}

}  // namespace vigil::cuda
