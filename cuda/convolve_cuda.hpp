// Full linear convolution on the GPU (numpy.convolve 'full', n + m - 1 outputs): up to 512 taps
// (the shorter input) the tiled direct kernel in one launch; beyond, the longer input streams
// through OverlapSaveCuda with the shorter one as the filter. Host memory in and out, for
// vigil-dsp --backend cuda. Host C++ only.
#pragma once

#include <cstddef>

namespace vigil::cuda {

// y: n + m - 1 values; n, m >= 1. Throws std::invalid_argument, or CudaError (no device, ...).
void convolve_full_cuda(const float* x, size_t n, const float* h, size_t m, float* y);

}  // namespace vigil::cuda
