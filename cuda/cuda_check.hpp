// CUDA error checks: one that throws (setup), one that returns a status (real-time path), and a
// launch check that synchronises after every launch when VIGIL_CUDA_DEBUG_SYNC is defined.
#pragma once

#include <cuda_runtime_api.h>

#include <new>
#include <stdexcept>
#include <string>

namespace vigil::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    throw CudaError(e, std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                           cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// Setup-time cuFFT check (cufftResult passed as int so this header needs no cufft.h).
inline void check_cufft(int result, const char* what) {
  if (result != 0)
    throw CudaError(cudaErrorLaunchFailure, std::string("cuFFT ") + what + " failed with cufftResult " + std::to_string(result));
}

// Runs f, a call that throws on failure (a GPU object's reset or set-up), where a status is
// wanted instead (noexcept paths: a stage's reset or reload): the CUDA error it threw,
// cudaErrorMemoryAllocation for std::bad_alloc, cudaErrorUnknown for anything else.
template <typename F>
cudaError_t error_of(F&& f) noexcept {
  try {
    f();
    return cudaSuccess;
  } catch (const CudaError& e) {
    return e.code();
  } catch (const std::bad_alloc&) {
    return cudaErrorMemoryAllocation;
  } catch (...) {
    return cudaErrorUnknown;
  }
}

// How many CUDA devices this process sees (0 where none answers).
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// True when at least one CUDA device can be used; otherwise false with the reason in why.
inline bool device_available(std::string* why = nullptr) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  return true;
}

}  // namespace vigil::cuda

#define VIGIL_CUDA_CHECK(call) ::vigil::cuda::check((call), #call, __FILE__, __LINE__)
// Inside process(): returns the error from the enclosing function instead of throwing.
#define VIGIL_CUDA_RETURN_IF_ERROR(call)     \
  do {                                       \
    const cudaError_t vigil_e_ = (call);     \
    if (vigil_e_ != cudaSuccess) return vigil_e_; \
  } while (0)
