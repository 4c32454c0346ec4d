#include "cuda/convolve_direct.cuh"

#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

constexpr int R = int(kConvolvePerThread);

// Loads the block's taps and its inputs x[i0 - (m - 1) .. i0 + tile - 1] (zero outside [0, n))
// into shared memory. Unrolled so that several global loads are in flight per thread.
__device__ void load_tile(const float* __restrict__ x, long long n, const float* __restrict__ h, int m,
                          long long i0, int tile, float* hs, float* xs) {
#pragma unroll 8
  for (int j = threadIdx.x; j < m; j += blockDim.x) hs[j] = __ldg(h + j);
  const int span = tile + m - 1;
#pragma unroll 8
  for (int j = threadIdx.x; j < span; j += blockDim.x) {
    const long long src = i0 - (m - 1) + j;
    xs[j] = (src >= 0 && src < n) ? __ldg(x + src) : 0.0f;
  }
}

// acc[r] += sum over taps k in [k0, k1) of hs[k] * xs[base + r - k]: R consecutive outputs.
// The window win[r] = xs[base + r - k] slides down by one per tap. Groups of R taps: first every
// load of the group (R taps, broadcast; the R inputs that enter the window, distinct banks since
// R is odd), all in flight at once, then R x R multiply-adds in which the shift is a renaming of
// registers. An index below 0 (only past the last tap, value unused) is clamped.
__device__ void accumulate_taps(const float* hs, const float* xs, int base, int k0, int k1, float (&acc)[R]) {
  float win[R];
#pragma unroll
  for (int r = 0; r < R; ++r) win[r] = xs[base + r - k0];
  int k = k0;
  for (; k + R <= k1; k += R) {
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
  for (; k < k1; ++k) {
    const float hk = hs[k];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = fmaf(hk, win[r], acc[r]);
#pragma unroll
    for (int r = R - 1; r > 0; --r) win[r] = win[r - 1];
    win[0] = xs[max(base - k - 1, 0)];
  }
}

// Large inputs: block b computes outputs [b * tile, (b + 1) * tile), tile = blockDim.x * R;
// thread t owns outputs i0 + t * R + r over every tap.
__global__ void convolve_full_tiled_kernel(const float* __restrict__ x, long long n, const float* __restrict__ h,
                                           int m, float* __restrict__ y, long long n_out) {
  extern __shared__ float smem[];
  float* hs = smem;
  float* xs = smem + m;
  const int tile = int(blockDim.x) * R;
  const long long i0 = (long long)blockIdx.x * tile;
  load_tile(x, n, h, m, i0, tile, hs, xs);
  __syncthreads();
  float acc[R] = {};
  accumulate_taps(hs, xs, int(threadIdx.x) * R + m - 1, 0, m, acc);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long i = i0 + (long long)threadIdx.x * R + r;
    if (i < n_out) y[i] = acc[r];
  }
}

// Small inputs: too few outputs to keep the GPU busy one thread per R outputs, so the taps are
// split too. A block's 32 * R outputs are shared by its warps, warp w summing one slice of the
// taps; the slices' partial sums meet in shared memory and are added in warp order (the same
// order every run: the result is deterministic).
__global__ void convolve_full_split_kernel(const float* __restrict__ x, long long n, const float* __restrict__ h,
                                           int m, float* __restrict__ y, long long n_out) {
  extern __shared__ float smem[];
  constexpr int tile = 32 * R;
  const int warps = int(blockDim.x) / 32, warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  float* hs = smem;
  float* xs = hs + m;
  float* partial = xs + tile + m - 1;  // [warps][tile]
  const long long i0 = (long long)blockIdx.x * tile;
  load_tile(x, n, h, m, i0, tile, hs, xs);
  __syncthreads();
  const int slice = (m + warps - 1) / warps;
  const int k0 = min(m, warp * slice), k1 = min(m, k0 + slice);
  float acc[R] = {};
  accumulate_taps(hs, xs, lane * R + m - 1, k0, k1, acc);
#pragma unroll
  for (int r = 0; r < R; ++r) partial[warp * tile + lane * R + r] = acc[r];
  __syncthreads();
  for (int j = threadIdx.x; j < tile; j += blockDim.x) {
    float sum = 0.0f;
    for (int w = 0; w < warps; ++w) sum += partial[w * tile + j];
    const long long i = i0 + j;
    if (i < n_out) y[i] = sum;
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

// The streaming bank: block (tile, c, b) computes lane (b, c)'s outputs [i0, i0 + tile), inputs
// before the call's first from the channel's history.
__global__ void fir_direct_bank_kernel(const float* __restrict__ x, size_t in_stride, long long frames,
                                       const float* __restrict__ hist, const float* __restrict__ taps, int m,
                                       float* __restrict__ y, size_t out_stride, uint32_t channels) {
  extern __shared__ float smem[];
  float* hs = smem;
  float* xs = smem + m;
  const int tile = int(blockDim.x) * R;
  const long long i0 = (long long)blockIdx.x * tile;
  const uint32_t c = blockIdx.y, b = blockIdx.z;
  const float* xc = x + size_t(c) * in_stride;
  const float* hc = hist + size_t(c) * size_t(m - 1);
  const float* hb = taps + size_t(b) * size_t(m);
#pragma unroll 8
  for (int j = threadIdx.x; j < m; j += blockDim.x) hs[j] = __ldg(hb + j);
  const int span = tile + m - 1;
#pragma unroll 8
  for (int j = threadIdx.x; j < span; j += blockDim.x) {
    const long long src = i0 - (m - 1) + j;
    xs[j] = src < 0 ? __ldg(hc + (m - 1) + src) : src < frames ? __ldg(xc + src) : 0.0f;
  }
  __syncthreads();
  float acc[R] = {};
  accumulate_taps(hs, xs, int(threadIdx.x) * R + m - 1, 0, m, acc);
  float* yl = y + (size_t(b) * channels + c) * out_stride;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long i = i0 + (long long)threadIdx.x * R + r;
    if (i < frames) yl[i] = acc[r];
  }
}

// Sample i of a channel's history after a call of `frames` samples x: the last h samples of
// [hist | x] (hist: the h samples before the call).
__device__ __forceinline__ float carried_sample(const float* x, const float* hist, long long frames, int h, int i) {
  const long long src = frames - h + i;  // index in the call's frames (negative: the history's)
  return src >= 0 ? x[src] : hist[h + src];
}

__global__ void fir_direct_carry_kernel(const float* __restrict__ x, size_t in_stride, long long frames,
                                        const float* __restrict__ hist, int h, float* __restrict__ next) {
  const uint32_t c = blockIdx.y;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < h; i += gridDim.x * blockDim.x) {
    next[size_t(c) * h + i] = carried_sample(x + size_t(c) * in_stride, hist + size_t(c) * h, frames, h, i);
  }
}

// The streaming bank for filters too long for one block's shared memory or chunks too short to
// fill the GPU one thread per R outputs (cuda/convolve_direct.cuh: launch_fir_direct_split).
// Block (t, s) of lane (c, b) sums taps [s * seg, (s + 1) * seg) for the outputs of tile t; each
// of its warps takes a slice of the segment and the slices' sums are added in warp order. The
// block's sums go to `partial`; the block that brings a lane's tile its last segment (a counter
// per lane and tile, which it resets) adds the segments' sums in segment order and writes the
// outputs. Every output is so the same sum in the same order whichever block finishes last.
__global__ void fir_direct_split_kernel(FirSplitArgs a) {
  extern __shared__ float smem[];
  __shared__ bool last_segment;
  constexpr int tile = 32 * R;
  const int warps = int(blockDim.x) / 32, warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int t = int(blockIdx.x) / a.segments, s = int(blockIdx.x) % a.segments;
  const uint32_t c = blockIdx.y, b = blockIdx.z;
  const int h = a.m - 1;
  const float* hb = a.taps + size_t(b) * size_t(a.m);
  const int k0 = s * a.seg;
  float* hs = smem;
  for (int j = threadIdx.x; j < a.seg; j += blockDim.x) hs[j] = k0 + j < a.m ? __ldg(hb + k0 + j) : 0.0f;
  // Which history buffer is current: read once per block, by thread 0. The call's last launch
  // flips it for the next call once every block has read it: the last block to count itself.
  __shared__ int block_parity;
  if (threadIdx.x == 0) {
    block_parity = __ldcg(a.parity);
    if (a.carry) {
      __threadfence();  // the read above before the count below
      const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
      unsigned* started = a.counters + size_t(a.tiles) * a.channels * gridDim.z;
      if (atomicAdd(started, 1u) == blocks - 1) {
        *started = 0;
        *a.parity = block_parity ^ 1;
      }
    }
  }
  __syncthreads();
  const int parity = block_parity;
  const float* hist = (parity ? a.hist1 : a.hist0) + size_t(c) * size_t(h);
  const float* xc = a.x + size_t(c) * a.in_stride;
  const long long i0 = a.first + (long long)t * tile;
  float* xs = hs + a.seg;
  float* part = xs + tile + a.seg - 1;  // [warps][tile]
  const int span = tile + a.seg - 1;
  for (int j = threadIdx.x; j < span; j += blockDim.x) {
    const long long src = i0 - k0 - (a.seg - 1) + j;  // x index of xs[j]; before 0: the history
    xs[j] = src >= a.frames ? 0.0f : src >= 0 ? __ldg(xc + src) : src >= -h ? __ldcg(hist + h + src) : 0.0f;
  }
  __syncthreads();
  const int slice = a.seg / warps;
  float acc[R] = {};
  accumulate_taps(hs, xs, lane * R + a.seg - 1, warp * slice, (warp + 1) * slice, acc);
#pragma unroll
  for (int r = 0; r < R; ++r) part[warp * tile + lane * R + r] = acc[r];
  __syncthreads();
  const size_t lane_tile = (size_t(b) * a.channels + c) * size_t(a.tiles) + size_t(t);
  float* all = a.partial + lane_tile * size_t(a.segments) * tile;
  for (int j = threadIdx.x; j < tile; j += blockDim.x) {
    float sum = 0.0f;
    for (int w = 0; w < warps; ++w) sum += part[w * tile + j];
    __stcg(all + size_t(s) * tile + j, sum);
  }
  // The history after the call: channel c's last h samples of [history | frames], written to the
  // other buffer by band 0's blocks of the call's last launch, each a share.
  if (a.carry && b == 0) {
    float* next = (parity ? a.hist0 : a.hist1) + size_t(c) * size_t(h);
    const int share = (h + int(gridDim.x) - 1) / int(gridDim.x);
    const int lo = int(blockIdx.x) * share, hi = min(h, lo + share);
    for (int i = lo + int(threadIdx.x); i < hi; i += blockDim.x) next[i] = carried_sample(xc, hist, a.frames, h, i);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned before = atomicAdd(a.counters + lane_tile, 1u);
    last_segment = before == unsigned(a.segments - 1);
  }
  __syncthreads();
  if (last_segment) {
    __threadfence();
    float* yl = a.y + (size_t(b) * a.channels + c) * a.out_stride;
    for (int j = threadIdx.x; j < tile; j += blockDim.x) {
      const long long i = i0 + j;
      if (i >= a.first + a.count) continue;
      float sum = 0.0f;
      for (int q = 0; q < a.segments; ++q) sum += __ldcg(all + size_t(q) * tile + j);
      yl[i] = sum;
    }
    if (threadIdx.x == 0) a.counters[lane_tile] = 0;  // for the next launch
  }
}

}  // namespace

cudaError_t launch_fir_direct_bank(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels,
                                   const float* d_hist, const float* d_taps, uint32_t m, uint32_t bands, float* d_out,
                                   size_t out_stride, cudaStream_t stream) noexcept {
  if (frames < 1 || m < 1 || m > kConvolveMaxTaps || channels < 1 || channels > 65535 || bands < 1 || bands > 65535)
    return cudaErrorInvalidValue;
  const uint32_t tile = kConvolveThreads * kConvolvePerThread;
  const size_t shared = (size_t(m) + tile + m - 1) * sizeof(float);
  const dim3 grid((frames + tile - 1) / tile, channels, bands);
  fir_direct_bank_kernel<<<grid, kConvolveThreads, shared, stream>>>(d_in, in_stride, (long long)frames, d_hist,
                                                                     d_taps, int(m), d_out, out_stride, channels);
  return after_launch(stream);
}

cudaError_t launch_fir_direct_split(const FirSplitArgs& args, uint32_t bands, cudaStream_t stream) noexcept {
  const FirSplitArgs& a = args;
  if (a.count < 1 || a.tiles < 1 || (long long)a.tiles * kSplitTile < a.count || a.m < 1 || a.seg < 64 ||
      a.seg % 64 != 0 || a.segments != (a.m + a.seg - 1) / a.seg || a.channels < 1 || a.channels > 65535 || bands < 1 ||
      bands > 65535 || a.first < 0 || a.first + a.count > a.frames)
    return cudaErrorInvalidValue;
  constexpr unsigned threads = kSplitWarps * 32;
  const size_t shared = (size_t(a.seg) + kSplitTile + a.seg - 1 + size_t(kSplitWarps) * kSplitTile) * sizeof(float);
  const dim3 grid(unsigned(a.tiles) * unsigned(a.segments), a.channels, bands);
  fir_direct_split_kernel<<<grid, threads, shared, stream>>>(a);
  return after_launch(stream);
}

cudaError_t launch_fir_direct_carry(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels,
                                    const float* d_hist, uint32_t m, float* d_next, cudaStream_t stream) noexcept {
  if (m <= 1) return cudaSuccess;
  if (channels < 1 || channels > 65535 || m > kConvolveMaxTaps) return cudaErrorInvalidValue;
  const int h = int(m - 1);
  const dim3 grid((h + 255) / 256, channels);
  fir_direct_carry_kernel<<<grid, 256, 0, stream>>>(d_in, in_stride, (long long)frames, d_hist, h, d_next);
  return after_launch(stream);
}

cudaError_t launch_convolve_full_tiled(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept {
  if (n < 1 || m < 1 || m > kConvolveMaxTaps) return cudaErrorInvalidValue;
  const long long n_out = (long long)(n + m - 1);
  static const int sms = [] {
    int dev = 0, count = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      count = 1;
    return count;
  }();
  // Every thread of the tiled kernel runs through all m taps: with fewer than 2 blocks of 256
  // threads per SM, split the taps over 8 warps instead.
  const uint32_t big_tile = kConvolveThreads * kConvolvePerThread;
  if ((n_out + big_tile - 1) / big_tile >= 2LL * sms) {
    const unsigned blocks = unsigned((n_out + big_tile - 1) / big_tile);
    const size_t shared = (size_t(m) + big_tile + m - 1) * sizeof(float);
    convolve_full_tiled_kernel<<<blocks, kConvolveThreads, shared, stream>>>(d_x, (long long)n, d_h, int(m), d_y, n_out);
  } else {
    constexpr uint32_t kWarps = 8, tile = 32 * kConvolvePerThread;
    const unsigned blocks = unsigned((n_out + tile - 1) / tile);
    const size_t shared = (size_t(m) + tile + m - 1 + kWarps * tile) * sizeof(float);
    convolve_full_split_kernel<<<blocks, kWarps * 32, shared, stream>>>(d_x, (long long)n, d_h, int(m), d_y, n_out);
  }
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
