// One block per lane: pass 1 sums x and x^2 and finds min and max, pass 2 sums the mean-removed
// second and fourth powers, each reduced across the block in shared memory (double throughout).
#include <cfloat>

#include "cuda/lane_stats.cuh"
#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// Sums a[0..kThreads) into a[0]; every thread must call it.
__device__ void block_sum(double* a) {
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) a[threadIdx.x] += a[threadIdx.x + half];
    __syncthreads();
  }
}

__global__ void lane_stats_kernel(const float* __restrict__ x, size_t stride, uint32_t n, LaneStats* __restrict__ out) {
  __shared__ double s1[kThreads], s2[kThreads], lo[kThreads], hi[kThreads];
  const float* lane = x + size_t(blockIdx.x) * stride;
  double sum = 0, sum_sq = 0, mn = DBL_MAX, mx = -DBL_MAX;
  for (uint32_t i = threadIdx.x; i < n; i += kThreads) {
    const double v = lane[i];
    sum += v;
    sum_sq += v * v;
    mn = fmin(mn, v);
    mx = fmax(mx, v);
  }
  s1[threadIdx.x] = sum;
  s2[threadIdx.x] = sum_sq;
  lo[threadIdx.x] = mn;
  hi[threadIdx.x] = mx;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      s1[threadIdx.x] += s1[threadIdx.x + half];
      s2[threadIdx.x] += s2[threadIdx.x + half];
      lo[threadIdx.x] = fmin(lo[threadIdx.x], lo[threadIdx.x + half]);
      hi[threadIdx.x] = fmax(hi[threadIdx.x], hi[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const double count = double(n), mean = s1[0] / count, total_sq = s2[0], low = lo[0], high = hi[0];
  __syncthreads();  // s1 and s2 are reused below
  double m2 = 0, m4 = 0;
  for (uint32_t i = threadIdx.x; i < n; i += kThreads) {
    const double d = double(lane[i]) - mean, d2 = d * d;
    m2 += d2;
    m4 += d2 * d2;
  }
  s1[threadIdx.x] = m2;
  s2[threadIdx.x] = m4;
  block_sum(s1);
  block_sum(s2);
  if (threadIdx.x == 0) {
    const double c2 = s1[0] / count, c4 = s2[0] / count;
    LaneStats s;
    s.rms = sqrt(total_sq / count);
    s.peak = fmax(fabs(low), fabs(high));
    s.peak_to_peak = high - low;
    s.crest_factor = s.rms > 0 ? s.peak / s.rms : 0.0;
    s.kurtosis = c2 > 0 ? c4 / (c2 * c2) : 0.0;
    out[blockIdx.x] = s;
  }
}

}  // namespace

cudaError_t launch_lane_stats(const float* d_x, size_t stride, uint32_t n, uint32_t lanes, LaneStats* d_out,
                              cudaStream_t stream) noexcept {
  if (lanes == 0) return cudaSuccess;
  if (n == 0) return cudaErrorInvalidValue;
  lane_stats_kernel<<<lanes, kThreads, 0, stream>>>(d_x, stride, n, d_out);
  return after_launch(stream);
}

}  // namespace vigil::cuda
