// One block per (run, lane): each thread sums its samples' powers of x - x[first] (doubles),
// the block reduces them (warp shuffles, then one value per warp through shared memory), and
// thread 0 turns the power sums into central sums with moments_of()'s formulas.
#include "cuda/lane_moments.cuh"
#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

constexpr unsigned kThreads = 256, kWarps = kThreads / 32, kFull = 0xFFFFFFFFu;

struct Sums {
  double s1, s2, s3, s4;
  float lo, hi;
};

__device__ __forceinline__ Sums combine(Sums a, const Sums& b) {
  a.s1 += b.s1;
  a.s2 += b.s2;
  a.s3 += b.s3;
  a.s4 += b.s4;
  a.lo = a.lo < b.lo ? a.lo : b.lo;
  a.hi = a.hi > b.hi ? a.hi : b.hi;
  return a;
}

__device__ __forceinline__ Sums warp_combine(Sums a) {
  for (int o = 16; o > 0; o >>= 1) {
    Sums b;
    b.s1 = __shfl_xor_sync(kFull, a.s1, o);
    b.s2 = __shfl_xor_sync(kFull, a.s2, o);
    b.s3 = __shfl_xor_sync(kFull, a.s3, o);
    b.s4 = __shfl_xor_sync(kFull, a.s4, o);
    b.lo = __shfl_xor_sync(kFull, a.lo, o);
    b.hi = __shfl_xor_sync(kFull, a.hi, o);
    a = combine(a, b);
  }
  return a;
}

// Block (run, lane)'s moments of [first, end) into out[lane * runs + run].
__device__ __forceinline__ void run_moments(const float* __restrict__ x, size_t stride, uint32_t first, uint32_t end,
                                            uint32_t runs, Moments* __restrict__ out) {
  __shared__ Sums warps[kWarps];
  const uint32_t run = blockIdx.x, lane = blockIdx.y;
  const float* p = x + size_t(lane) * stride;
  const float k = p[first];
  Sums s{0, 0, 0, 0, k, k};
  for (uint32_t i = first + threadIdx.x; i < end; i += kThreads) {
    const float v = p[i];
    const double d = double(v) - double(k), d2 = d * d;
    s.s1 += d;
    s.s2 += d2;
    s.s3 += d2 * d;
    s.s4 += d2 * d2;
    s.lo = s.lo < v ? s.lo : v;
    s.hi = s.hi > v ? s.hi : v;
  }
  s = warp_combine(s);
  if ((threadIdx.x & 31u) == 0) warps[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (unsigned w = 1; w < kWarps; ++w) s = combine(s, warps[w]);
  // Power sums about k -> central sums about the mean (dsp/window_moments.cpp, moments_of).
  const double count = double(end - first), d = s.s1 / count, d2 = d * d;
  Moments m;
  m.n = count;
  m.mean = double(k) + d;
  m.m2 = fmax(0.0, s.s2 - count * d2);
  m.m3 = s.s3 - 3 * d * s.s2 + 2 * count * d2 * d;
  m.m4 = fmax(0.0, s.s4 - 4 * d * s.s3 + 6 * d2 * s.s2 - 3 * count * d2 * d2);
  m.lo = s.lo;
  m.hi = s.hi;
  out[size_t(lane) * runs + run] = m;
}

__global__ void lane_moments_kernel(const float* __restrict__ x, size_t stride, RunSplit split,
                                    Moments* __restrict__ out) {
  run_moments(x, stride, split.start[blockIdx.x], split.start[blockIdx.x + 1], split.runs, out);
}

// The run's bounds from the cell (two loads a block, shared with the block).
__global__ void lane_moments_cell_kernel(const float* __restrict__ x, size_t stride, const uint32_t* starts,
                                         uint32_t runs, Moments* __restrict__ out) {
  __shared__ uint32_t bounds[2];
  if (threadIdx.x < 2) bounds[threadIdx.x] = starts[blockIdx.x + threadIdx.x];
  __syncthreads();
  run_moments(x, stride, bounds[0], bounds[1], runs, out);
}

}  // namespace

cudaError_t launch_lane_moments(const float* d_x, size_t stride, uint32_t lanes, const RunSplit& split,
                                Moments* d_out, cudaStream_t stream) noexcept {
  if (lanes == 0) return cudaSuccess;
  if (!valid_split(split) || lanes > 65535) return cudaErrorInvalidValue;
  lane_moments_kernel<<<dim3(split.runs, lanes), kThreads, 0, stream>>>(d_x, stride, split, d_out);
  return after_launch(stream);
}

cudaError_t launch_lane_moments_from_cell(const float* d_x, size_t stride, uint32_t lanes, uint32_t runs,
                                          const uint32_t* d_starts, Moments* d_out, cudaStream_t stream) noexcept {
  if (lanes == 0) return cudaSuccess;
  if (runs == 0 || runs > RunSplit::kMaxRuns || lanes > 65535 || !d_starts) return cudaErrorInvalidValue;
  lane_moments_cell_kernel<<<dim3(runs, lanes), kThreads, 0, stream>>>(d_x, stride, d_starts, runs, d_out);
  return after_launch(stream);
}

}  // namespace vigil::cuda
