// The DWT levels run as tiles: each block stages the inputs its outputs need (with the periodic
// wrap applied once, at the load) in shared memory and sums the taps from there. Lengths up to
// kFusedLevelsMax finish all their remaining levels in one block. The median is an exact radix
// select on the bit patterns of |v| (for non-negative floats the pattern orders as the value).
#include <algorithm>

#include "cuda/launch_check.cuh"
#include "cuda/wavelet.cuh"
#include "cuda/wavelet_device.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 256;  // outputs (analysis: of ca and cd each; synthesis: pairs) per block

// cA[i] = sum_k lo[k] a[(2i + s - k) mod m], cD likewise with hi. Block b: i in [b*kTile, +kTile),
// inputs from 2*i0 + s - (L - 1) to 2*(i0 + kTile - 1) + s.
__global__ void analyse_kernel(WaveletFilters f, const float* __restrict__ a, uint32_t m, float* __restrict__ ca,
                               float* __restrict__ cd) {
  __shared__ float tile[2 * kTile + kMaxWaveletTaps];
  const int len = f.len, s = len / 2;
  const long i0 = long(blockIdx.x) * kTile;
  const long first = 2 * i0 + s - (len - 1);
  const int span = 2 * kTile + len - 1;
  for (int j = threadIdx.x; j < span; j += kThreads) tile[j] = a[wavelet_wrap(first + j, m)];
  __syncthreads();
  const long half = m / 2;
  for (int t = threadIdx.x; t < kTile; t += kThreads) {
    const long i = i0 + t;
    if (i >= half) break;
    // a[2i + s - k] sits at tile[2t + (len - 1) - k].
    const float* p = tile + 2 * t + (len - 1);
    float lo = 0.0f, hi = 0.0f;
    for (int k = 0; k < len; ++k) {
      lo = fmaf(f.lo[k], p[-k], lo);
      hi = fmaf(f.hi[k], p[-k], hi);
    }
    ca[i] = lo;
    cd[i] = hi;
  }
}

// a[t] = sum over k with t + k - s even of lo[k] cA[i] + hi[k] cD[i], i = ((t + k - s) / 2) mod half.
// Block b: t in [b*2*kTile, +2*kTile); i from (t0 - s) / 2 - 1 to (t0 + 2*kTile - 1 + len - 1 - s) / 2 + 1.
__global__ void synthesise_kernel(WaveletFilters f, const float* __restrict__ ca, const float* __restrict__ cd,
                                  uint32_t m, float* __restrict__ a) {
  __shared__ float ta[kTile + kMaxWaveletTaps / 2 + 4], td[kTile + kMaxWaveletTaps / 2 + 4];
  const int len = f.len, s = len / 2;
  const long half = m / 2, t0 = long(blockIdx.x) * 2 * kTile;
  const long i_first = (t0 - s) / 2 - 1;  // floor-ish, one to spare either side
  const int span = kTile + len / 2 + 3;
  for (int j = threadIdx.x; j < span; j += kThreads) {
    const int w = wavelet_wrap(i_first + j, half);
    ta[j] = ca[w];
    td[j] = cd[w];
  }
  __syncthreads();
  for (int u = threadIdx.x; u < 2 * kTile; u += kThreads) {
    const long t = t0 + u;
    if (t >= long(m)) break;
    float acc = 0.0f;
    for (int k = (int((t - s) & 1) ? 1 : 0); k < len; k += 2) {  // t + k - s even
      const long i = (t + k - s) / 2;  // exact: t + k - s is even (may be negative)
      const int j = int(i - i_first);
      acc = fmaf(f.lo[k], ta[j], acc);
      acc = fmaf(f.hi[k], td[j], acc);
    }
    a[t] = acc;
  }
}

// All remaining analysis levels of one length-m signal in one block (m <= kFusedLevelsMax).
__global__ void analyse_fused_kernel(WaveletFilters f, const float* __restrict__ in, uint32_t m, unsigned levels,
                                     float* __restrict__ coeffs) {
  __shared__ float buf[2][kFusedLevelsMax];
  for (uint32_t i = threadIdx.x; i < m; i += blockDim.x) buf[0][i] = in[i];
  __syncthreads();
  analyse_levels_in_block(f, buf[0], buf[1], m, levels, coeffs);
}

// The deepest `levels` synthesis levels in one block, from coeffs[0, m0) and the details above it.
__global__ void synthesise_fused_kernel(WaveletFilters f, const float* __restrict__ coeffs, uint32_t m0,
                                        unsigned levels, float* __restrict__ out) {
  __shared__ float buf[2][kFusedLevelsMax];
  for (uint32_t i = threadIdx.x; i < m0; i += blockDim.x) buf[0][i] = coeffs[i];
  __syncthreads();
  const float* y = synthesise_levels_in_block(f, coeffs, m0, levels, buf[0], buf[1]);
  for (uint32_t i = threadIdx.x; i < (m0 << levels); i += blockDim.x) out[i] = y[i];
}

__global__ void select_init_kernel(SelectState* state, uint32_t r0, uint32_t r1) {
  state[0] = {0u, r0};
  state[1] = {0u, r1};
}

// Block-local histograms in shared memory, added to the global ones.
__global__ void select_histogram_kernel(const float* __restrict__ v, size_t n, int shift, int bits,
                                        const SelectState* __restrict__ state, uint32_t* __restrict__ hist) {
  __shared__ uint32_t h[2][kSelectBins];
  const uint32_t bins = 1u << bits;
  for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) h[0][b] = h[1][b] = 0;
  __syncthreads();
  const int high = shift + bits;  // bits above this must match the prefix
  const uint32_t p0 = state[0].prefix, p1 = state[1].prefix;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < n; g += size_t(gridDim.x) * blockDim.x) {
    const uint32_t u = __float_as_uint(fabsf(v[g]));
    const uint32_t top = high >= 32 ? 0u : u >> high;
    const uint32_t bin = (u >> shift) & (bins - 1);
    if (top == p0) atomicAdd(&h[0][bin], 1u);
    if (top == p1) atomicAdd(&h[1][bin], 1u);
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) {
    if (h[0][b]) atomicAdd(&hist[b], h[0][b]);
    if (h[1][b]) atomicAdd(&hist[kSelectBins + b], h[1][b]);
  }
}

// One block per state: find the bin where the running count passes the rank (each thread scans
// its share of bins, a shared prefix sum places it), append it to the prefix, clear the histogram.
__global__ void select_pick_kernel(int bits, SelectState* state, uint32_t* hist) {
  __shared__ uint32_t part[kThreads];
  SelectState* st = state + blockIdx.x;
  uint32_t* h = hist + size_t(blockIdx.x) * kSelectBins;
  const uint32_t bins = 1u << bits, per = (bins + kThreads - 1) / kThreads;
  const uint32_t b0 = threadIdx.x * per;
  uint32_t mine = 0;
  for (uint32_t b = b0; b < b0 + per && b < bins; ++b) mine += h[b];
  part[threadIdx.x] = mine;
  __syncthreads();
  for (int off = 1; off < kThreads; off *= 2) {  // inclusive scan (Hillis-Steele)
    const uint32_t add = int(threadIdx.x) >= off ? part[threadIdx.x - off] : 0u;
    __syncthreads();
    part[threadIdx.x] += add;
    __syncthreads();
  }
  const uint32_t before = threadIdx.x ? part[threadIdx.x - 1] : 0u;
  const uint32_t rank = st->rank;
  __syncthreads();
  if (rank >= before && rank < part[threadIdx.x]) {  // exactly one thread holds the rank
    uint32_t run = before;
    for (uint32_t b = b0; b < b0 + per && b < bins; ++b) {
      if (rank < run + h[b]) {
        st->prefix = (st->prefix << bits) | b;
        st->rank = rank - run;
        break;
      }
      run += h[b];
    }
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < bins; b += kThreads) h[b] = 0;  // ready for the next pass
}

__global__ void threshold_from_median_kernel(const SelectState* state, bool odd, double universal, float* thr,
                                             unsigned count) {
  const float upper = __uint_as_float(state[1].prefix);
  const float median = odd ? upper : 0.5f * (__uint_as_float(state[0].prefix) + upper);
  const float sigma = median / 0.6745f;
  const float t = float(double(sigma) * universal);
  for (unsigned j = threadIdx.x; j < count; j += blockDim.x) thr[j] = t;
}

__global__ void threshold_kernel(float* __restrict__ coeffs, uint32_t n, uint32_t from, const float* __restrict__ thr,
                                 bool soft) {
  for (uint32_t g = from + blockIdx.x * blockDim.x + threadIdx.x; g < n; g += gridDim.x * blockDim.x) {
    int level = 1;  // g in [n >> j, n >> (j - 1)): level j (n need not be a power of two)
    while (g < (n >> level)) ++level;
    const float t = thr[level - 1], c = coeffs[g];
    if (soft) {
      const float mag = fabsf(c) - t;
      coeffs[g] = mag > 0.0f ? copysignf(mag, c) : 0.0f;
    } else if (fabsf(c) < t) {
      coeffs[g] = 0.0f;  // pywt keeps |x| >= threshold
    }
  }
}


}  // namespace

cudaError_t launch_dwt_analyse(const WaveletFilters& f, const float* d_a, uint32_t m, float* d_ca, float* d_cd,
                               cudaStream_t stream) noexcept {
  const uint32_t half = m / 2, blocks = (half + kTile - 1) / kTile;
  analyse_kernel<<<blocks, kThreads, 0, stream>>>(f, d_a, m, d_ca, d_cd);
  return after_launch(stream);
}

cudaError_t launch_dwt_analyse_fused(const WaveletFilters& f, const float* d_a, uint32_t m, unsigned levels,
                                     float* d_coeffs, cudaStream_t stream) noexcept {
  if (m > kFusedLevelsMax) return cudaErrorInvalidValue;
  analyse_fused_kernel<<<1, 1024, 0, stream>>>(f, d_a, m, levels, d_coeffs);
  return after_launch(stream);
}

cudaError_t launch_dwt_synthesise(const WaveletFilters& f, const float* d_ca, const float* d_cd, uint32_t m,
                                  float* d_a, cudaStream_t stream) noexcept {
  const uint32_t blocks = (m + 2 * kTile - 1) / (2 * kTile);
  synthesise_kernel<<<blocks, kThreads, 0, stream>>>(f, d_ca, d_cd, m, d_a);
  return after_launch(stream);
}

cudaError_t launch_dwt_synthesise_fused(const WaveletFilters& f, const float* d_coeffs, uint32_t m0, unsigned levels,
                                        float* d_out, cudaStream_t stream) noexcept {
  if ((uint64_t(m0) << levels) > kFusedLevelsMax) return cudaErrorInvalidValue;
  synthesise_fused_kernel<<<1, 1024, 0, stream>>>(f, d_coeffs, m0, levels, d_out);
  return after_launch(stream);
}

cudaError_t launch_select_init(SelectState* d_state, uint32_t r0, uint32_t r1, cudaStream_t stream) noexcept {
  select_init_kernel<<<1, 1, 0, stream>>>(d_state, r0, r1);
  return after_launch(stream);
}

cudaError_t launch_select_pass(const float* d_v, size_t n, int shift, int bits, SelectState* d_state,
                               uint32_t* d_hist, cudaStream_t stream) noexcept {
  if (bits < 1 || bits > 11 || n == 0) return cudaErrorInvalidValue;
  const unsigned blocks = unsigned(std::min<size_t>(grid_for(n), 132 * 8));
  select_histogram_kernel<<<blocks, kThreads, 0, stream>>>(d_v, n, shift, bits, d_state, d_hist);
  select_pick_kernel<<<2, kThreads, 0, stream>>>(bits, d_state, d_hist);
  return after_launch(stream);
}

cudaError_t launch_threshold_from_median(const SelectState* d_state, bool odd, double universal, float* d_thr,
                                         unsigned count, cudaStream_t stream) noexcept {
  threshold_from_median_kernel<<<1, 32, 0, stream>>>(d_state, odd, universal, d_thr, count);
  return after_launch(stream);
}

cudaError_t launch_threshold(float* d_coeffs, uint32_t n, unsigned levels, const float* d_thr, bool soft,
                             cudaStream_t stream) noexcept {
  const uint32_t from = n >> levels;
  if (from >= n) return cudaSuccess;
  threshold_kernel<<<grid_for(n - from), kThreads, 0, stream>>>(d_coeffs, n, from, d_thr, soft);
  return after_launch(stream);
}

}  // namespace vigil::cuda
