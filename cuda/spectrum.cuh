// Kernels of SpectrumCuda: windowing (with the segment mean removed for Welch) before a batched
// real cuFFT, and after it magnitudes or a Welch power sum. Layout: rows of n samples in, rows of
// bins = n/2 + 1 complex values out of the FFT.
#pragma once

#include <cuda_runtime_api.h>
#include <vector_types.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

// out[r * n + i] = x[r * row_step + i] * w[i] for r < rows, i < n.
cudaError_t launch_window_rows(const float* d_x, size_t row_step, const float* d_w, uint32_t n, uint32_t rows,
                               float* d_out, cudaStream_t stream) noexcept;
// As launch_window_rows with each row's mean (over its n samples, summed in double) removed first:
// out[r * n + i] = (x[r * row_step + i] - mean_r) * w[i]. One block per row.
cudaError_t launch_detrend_window_rows(const float* d_x, size_t row_step, const float* d_w, uint32_t n,
                                       uint32_t rows, float* d_out, cudaStream_t stream) noexcept;
// mag[i] = |spec[i]| for i < count.
cudaError_t launch_magnitude(const float2* d_spec, size_t count, float* d_mag, cudaStream_t stream) noexcept;
// sum[k] += sum over r < rows of |spec[r * bins + k]|^2, in double.
cudaError_t launch_power_sum(const float2* d_spec, uint32_t bins, uint32_t rows, double* d_sum,
                             cudaStream_t stream) noexcept;
// psd[k] = sum[k] * scale * (k == 0 || k == bins - 1 ? 1 : 2) / segments (one-sided density).
cudaError_t launch_welch_finish(const double* d_sum, uint32_t bins, double scale, double segments, double* d_psd,
                                cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
