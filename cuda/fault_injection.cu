#include "cuda/fault_injection.hpp"

namespace vigil::cuda {
namespace {
__global__ void never_runs_kernel(int* p) {
  if (p) *p = 1;
}
}  // namespace

cudaError_t launch_failing_kernel_for_test(cudaStream_t stream) noexcept {
  never_runs_kernel<<<1, 4096, 0, stream>>>(nullptr);  // 4096 > 1024 threads per block: refused
  return cudaGetLastError();                            // reads and clears the launch error
}

}  // namespace vigil::cuda
