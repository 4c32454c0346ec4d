// Direct (time-domain) full convolution on the device, y[i] = sum_k h[k] x[i-k] for
// i in [0, n + m - 1): the short-filter form (FFT methods win for long filters).
//   launch_convolve_full_tiled: shared-memory tiles of the input and the taps, each thread
//     keeping kConvolvePerThread consecutive outputs in registers with a sliding window of
//     inputs, so one shared load feeds kConvolvePerThread multiply-adds; taps read as broadcasts.
//     Inputs too small to fill the GPU that way also split the taps over 8 warps per block
//     (partial sums added in a fixed order: deterministic).
//   launch_convolve_full_naive: the 2010 paper's kernel, one output per thread reading x and h
//     from global memory: the comparison in bench/convolve_cuda_bench and a second reference.
// POD arguments only; device pointers. Host-callable launchers (enqueue only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

constexpr uint32_t kConvolveThreads = 256;
constexpr uint32_t kConvolvePerThread = 9;   // odd: the window loads hit distinct shared-memory banks
constexpr uint32_t kConvolveMaxTaps = 4096;  // shared memory: taps + a tile of 2304 + m - 1 inputs (< 48 KiB)

// n >= 1, 1 <= m <= kConvolveMaxTaps; y holds n + m - 1 floats.
cudaError_t launch_convolve_full_tiled(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept;
cudaError_t launch_convolve_full_naive(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
