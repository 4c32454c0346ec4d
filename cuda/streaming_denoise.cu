#include "cuda/launch_check.cuh"
#include "cuda/streaming_denoise.cuh"
#include "cuda/wavelet_device.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// Shared memory of one window's block: two DWT buffers, the coefficients, the sort scratch.
size_t window_shared_bytes(uint32_t n) { return (3 * size_t(n) + n / 2) * sizeof(float); }

// numpy's median of |v[0, count)|, count a power of two (or 1), by a bitonic sort in `scratch`.
// Every thread gets the value; ends synchronised.
__device__ float block_median_abs(const float* v, uint32_t count, float* scratch) {
  for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) scratch[i] = fabsf(v[i]);
  __syncthreads();
  for (uint32_t k = 2; k <= count; k <<= 1) {
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) {
        const uint32_t partner = i ^ j;
        if (partner > i) {
          const bool ascending = (i & k) == 0;
          const float a = scratch[i], b = scratch[partner];
          if ((a > b) == ascending) {
            scratch[i] = b;
            scratch[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  const uint32_t mid = count / 2;
  const float m = count % 2 ? scratch[mid] : 0.5f * (scratch[mid - 1] + scratch[mid]);
  __syncthreads();  // the scratch may be reused at once
  return m;
}

__global__ void denoise_windows_kernel(DenoiseWindowsParams p) {
  extern __shared__ float smem[];
  const uint32_t n = p.n, j = blockIdx.x, lane = blockIdx.y;
  float* a = smem;
  float* b = smem + n;
  float* coeffs = smem + 2 * n;
  float* scratch = smem + 3 * n;
  const float* hist = p.hist + size_t(lane) * n;
  const float* in = p.in + size_t(lane) * p.in_stride;
  const size_t start = size_t(p.first_end) + size_t(j) * p.hop;  // in the line: hist, then the chunk
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const size_t at = start + i;
    a[i] = at < n ? hist[at] : in[at - n];
  }
  __syncthreads();
  analyse_levels_in_block(p.filters, a, b, n, p.levels, coeffs);
  // Level j's details sit at coeffs + (n >> j), n >> j of them (1 = finest).
  const float sigma_finest = block_median_abs(coeffs + n / 2, n / 2, scratch) / 0.6745f;
  for (unsigned level = 1; level <= p.levels; ++level) {
    float* d = coeffs + (n >> level);
    const uint32_t len = n >> level;
    const float sigma = p.per_level && level > 1 ? block_median_abs(d, len, scratch) / 0.6745f : sigma_finest;
    const float thr = float(double(sigma) * p.universal);
    for (uint32_t i = threadIdx.x; i < len; i += blockDim.x) {
      const float c = d[i];
      if (p.soft) {
        const float mag = fabsf(c) - thr;
        d[i] = mag > 0.0f ? copysignf(mag, c) : 0.0f;
      } else if (fabsf(c) < thr) {
        d[i] = 0.0f;  // pywt keeps |x| >= threshold
      }
    }
    __syncthreads();
  }
  const uint32_t m0 = n >> p.levels;
  for (uint32_t i = threadIdx.x; i < m0; i += blockDim.x) a[i] = coeffs[i];
  __syncthreads();
  const float* y = synthesise_levels_in_block(p.filters, coeffs, m0, p.levels, a, b);
  float* out = p.wout + (size_t(lane) * p.windows + j) * n;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = __fmul_rn(p.weight[i], y[i]);
}

// The hop finished by window w of this chunk, at phase f: the earlier half plus w's first half
// (added in this order, as the CPU twin's overlap-add does).
__device__ __forceinline__ float finished(const float* wout, const float* pending, uint32_t lane, uint32_t windows,
                                          uint32_t n, uint32_t hop, uint32_t w, uint32_t f) {
  const float* base = wout + size_t(lane) * windows * n;
  const float earlier = w == 0 ? pending[size_t(lane) * hop + f] : base[size_t(w - 1) * n + hop + f];
  return __fadd_rn(earlier, base[size_t(w) * n + f]);
}

__global__ void denoise_emit_kernel(const float* __restrict__ wout, const float* __restrict__ ready,
                                    const float* __restrict__ pending, uint32_t windows, uint32_t n, uint32_t hop,
                                    uint32_t fill, uint32_t frames, float* __restrict__ out, size_t out_stride) {
  const uint32_t lane = blockIdx.y;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < frames; t += gridDim.x * blockDim.x) {
    const uint32_t done = (fill + t) / hop, f = (fill + t) % hop;
    out[size_t(lane) * out_stride + t] =
        done == 0 ? ready[size_t(lane) * hop + f] : finished(wout, pending, lane, windows, n, hop, done - 1, f);
  }
}

__global__ void denoise_advance_kernel(const float* __restrict__ wout, float* ready, float* pending,
                                       const float* __restrict__ hist, const float* __restrict__ in, size_t in_stride,
                                       uint32_t windows, uint32_t n, uint32_t hop, uint32_t frames,
                                       float* __restrict__ hist_next) {
  const uint32_t lane = blockIdx.y;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    // The line's last n samples: line[frames + i].
    const size_t at = size_t(frames) + i;
    hist_next[size_t(lane) * n + i] = at < n ? hist[size_t(lane) * n + at] : in[size_t(lane) * in_stride + (at - n)];
    if (windows > 0 && i < hop) {
      // The same thread reads pending[i] (for window 0) before it overwrites it.
      const float r = finished(wout, pending, lane, windows, n, hop, windows - 1, i);
      pending[size_t(lane) * hop + i] = wout[(size_t(lane) * windows + windows - 1) * n + hop + i];
      ready[size_t(lane) * hop + i] = r;
    }
  }
}

}  // namespace

cudaError_t prepare_denoise_windows(uint32_t n) noexcept {
  if (n < 4 || n > kStreamingDenoiseMaxWindow) return cudaErrorInvalidValue;
  return cudaFuncSetAttribute(denoise_windows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(window_shared_bytes(kStreamingDenoiseMaxWindow)));
}

cudaError_t launch_denoise_windows(const DenoiseWindowsParams& p, cudaStream_t stream) noexcept {
  if (p.n < 4 || p.n > kStreamingDenoiseMaxWindow || p.levels < 1 || p.lanes == 0 || p.lanes > 65535)
    return cudaErrorInvalidValue;
  if (p.windows == 0) return cudaSuccess;
  denoise_windows_kernel<<<dim3(p.windows, p.lanes), kThreads, window_shared_bytes(p.n), stream>>>(p);
  return after_launch(stream);
}

cudaError_t launch_denoise_emit(const float* d_wout, const float* d_ready, const float* d_pending, uint32_t lanes,
                                uint32_t windows, uint32_t n, uint32_t hop, uint32_t fill, uint32_t frames,
                                float* d_out, size_t out_stride, cudaStream_t stream) noexcept {
  if (lanes == 0 || lanes > 65535 || hop == 0) return cudaErrorInvalidValue;
  if (frames == 0) return cudaSuccess;
  denoise_emit_kernel<<<dim3(grid_for(frames), lanes), kThreads, 0, stream>>>(d_wout, d_ready, d_pending, windows, n,
                                                                             hop, fill, frames, d_out, out_stride);
  return after_launch(stream);
}

cudaError_t launch_denoise_advance(const float* d_wout, float* d_ready, float* d_pending, const float* d_hist,
                                   const float* d_in, size_t in_stride, uint32_t lanes, uint32_t windows, uint32_t n,
                                   uint32_t hop, uint32_t frames, float* d_hist_next, cudaStream_t stream) noexcept {
  if (lanes == 0 || lanes > 65535 || hop == 0) return cudaErrorInvalidValue;
  denoise_advance_kernel<<<dim3(grid_for(n), lanes), kThreads, 0, stream>>>(d_wout, d_ready, d_pending, d_hist, d_in,
                                                                           in_stride, windows, n, hop, frames, d_hist_next);
  return after_launch(stream);
}

}  // namespace vigil::cuda
