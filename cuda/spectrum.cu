// Element-wise and per-row kernels around SpectrumCuda's batched real FFT. The plain window and
// the magnitude are grid-stride loops over a flat index (coalesced along the row); the detrending
// window needs each row's mean first, so it runs one block per row.
#include "cuda/launch_check.cuh"
#include "cuda/spectrum.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;


__global__ void window_rows_kernel(const float* __restrict__ x, size_t row_step, const float* __restrict__ w,
                                   uint32_t n, size_t total, float* __restrict__ out) {
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t r = g / n, i = g % n;
    out[g] = x[r * row_step + i] * w[i];
  }
}

__global__ void detrend_window_rows_kernel(const float* __restrict__ x, size_t row_step, const float* __restrict__ w,
                                           uint32_t n, float* __restrict__ out) {
  __shared__ double partial[kThreads];
  __shared__ double mean;
  const float* row = x + size_t(blockIdx.x) * row_step;
  double s = 0;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) mean = partial[0] / double(n);
  __syncthreads();
  float* o = out + size_t(blockIdx.x) * n;
  // As the CPU twin: the difference in double, rounded to float, then windowed.
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) o[i] = float(double(row[i]) - mean) * w[i];
}

__global__ void magnitude_kernel(const float2* __restrict__ spec, size_t count, float* __restrict__ mag) {
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < count; g += size_t(gridDim.x) * blockDim.x) {
    const float2 v = spec[g];
    mag[g] = sqrtf(v.x * v.x + v.y * v.y);
  }
}

__global__ void power_sum_kernel(const float2* __restrict__ spec, uint32_t bins, uint32_t rows, double* __restrict__ sum) {
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < bins; k += gridDim.x * blockDim.x) {
    double s = 0;
    for (uint32_t r = 0; r < rows; ++r) {  // threads of a warp read neighbouring bins: coalesced
      const float2 v = spec[size_t(r) * bins + k];
      s += double(v.x) * v.x + double(v.y) * v.y;
    }
    sum[k] += s;
  }
}

__global__ void welch_finish_kernel(const double* __restrict__ sum, uint32_t bins, double scale, double segments,
                                    double* __restrict__ psd) {
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < bins; k += gridDim.x * blockDim.x) {
    const double twice = (k == 0 || k == bins - 1) ? 1.0 : 2.0;
    psd[k] = sum[k] * scale * twice / segments;
  }
}

}  // namespace

cudaError_t launch_window_rows(const float* d_x, size_t row_step, const float* d_w, uint32_t n, uint32_t rows,
                               float* d_out, cudaStream_t stream) noexcept {
  const size_t total = size_t(rows) * n;
  if (total == 0) return cudaSuccess;
  window_rows_kernel<<<grid_for(total), kThreads, 0, stream>>>(d_x, row_step, d_w, n, total, d_out);
  return after_launch(stream);
}

cudaError_t launch_detrend_window_rows(const float* d_x, size_t row_step, const float* d_w, uint32_t n, uint32_t rows,
                                       float* d_out, cudaStream_t stream) noexcept {
  if (rows == 0 || n == 0) return cudaSuccess;
  detrend_window_rows_kernel<<<rows, kThreads, 0, stream>>>(d_x, row_step, d_w, n, d_out);
  return after_launch(stream);
}

cudaError_t launch_magnitude(const float2* d_spec, size_t count, float* d_mag, cudaStream_t stream) noexcept {
  if (count == 0) return cudaSuccess;
  magnitude_kernel<<<grid_for(count), kThreads, 0, stream>>>(d_spec, count, d_mag);
  return after_launch(stream);
}

cudaError_t launch_power_sum(const float2* d_spec, uint32_t bins, uint32_t rows, double* d_sum,
                             cudaStream_t stream) noexcept {
  if (bins == 0 || rows == 0) return cudaSuccess;
  power_sum_kernel<<<grid_for(bins), kThreads, 0, stream>>>(d_spec, bins, rows, d_sum);
  return after_launch(stream);
}

cudaError_t launch_welch_finish(const double* d_sum, uint32_t bins, double scale, double segments, double* d_psd,
                                cudaStream_t stream) noexcept {
  if (bins == 0) return cudaSuccess;
  welch_finish_kernel<<<grid_for(bins), kThreads, 0, stream>>>(d_sum, bins, scale, segments, d_psd);
  return after_launch(stream);
}

}  // namespace vigil::cuda
