// The check every launcher ends with: the launch's own error, and with VIGIL_CUDA_DEBUG_SYNC the
// kernel's too (synchronising after every launch, for debugging only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace vigil::cuda {

// Blocks for a grid-stride loop over n elements with `threads` per block: enough to cover n, at
// most 8 x 65535 (the loop takes the rest).
inline unsigned grid_for(size_t n, unsigned threads = 256) noexcept {
  const size_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

inline cudaError_t after_launch(cudaStream_t stream) noexcept {
  cudaError_t e = cudaPeekAtLastError();
#ifdef VIGIL_CUDA_DEBUG_SYNC
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
#else
  (void)stream;
#endif
  return e;
}

}  // namespace vigil::cuda
