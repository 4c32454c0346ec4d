// Test-only fault injection: a real kernel launch that fails (more threads per block than any
// device allows: the runtime refuses it, cudaErrorInvalidValue on CUDA 13), so the pipeline's CUDA error path and CPU fallback can be
// exercised on a healthy GPU. The error is not sticky: the context stays usable. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

namespace vigil::cuda {

// Launches a kernel with more threads per block than any device allows on `stream`; returns
// the launch's error (never cudaSuccess on a real device).
cudaError_t launch_failing_kernel_for_test(cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
