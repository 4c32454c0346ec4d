// The check every launcher ends with: the launch's own error, and with VIGIL_CUDA_DEBUG_SYNC the
// kernel's too (synchronising after every launch, for debugging only).
#pragma once

#include <cuda_runtime_api.h>

namespace vigil::cuda {

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
