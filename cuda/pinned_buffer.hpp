// PinnedBuffer: page-locked host memory (cudaHostAlloc) for host<->device staging. In mapped
// mode the same memory is also visible to kernels through device() (zero-copy: on an integrated
// GPU such as Jetson's the memory is shared, so no copy is needed at all); in copy mode device()
// is null and the caller copies with cudaMemcpyAsync, which is only truly asynchronous from
// page-locked memory. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  // Throws CudaError when the memory cannot be had, saying how much was asked for: page-locked
  // memory comes out of the machine's RAM (on a Jetson the same RAM the GPU uses), and the driver
  // refuses it long before the RAM is full when it is fragmented or held by other processes.
  PinnedBuffer(size_t bytes, bool mapped) : bytes_(bytes) {
    const cudaError_t alloc = cudaHostAlloc(&host_, bytes, mapped ? cudaHostAllocMapped : cudaHostAllocDefault);
    if (alloc != cudaSuccess) {
      host_ = nullptr;
      cudaGetLastError();  // not left for a later launch check to find
      throw CudaError(alloc, "cannot lock " + std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB of host memory (" +
                             (mapped ? "page-locked and mapped" : "page-locked") + ", cudaHostAlloc): " +
                             cudaGetErrorName(alloc) + ": " + cudaGetErrorString(alloc) +
                             " (fewer channels or shorter chunks need less)");
    }
    if (mapped) {
      const cudaError_t e = cudaHostGetDevicePointer(&device_, host_, 0);
      if (e != cudaSuccess) {
        cudaFreeHost(host_);
        host_ = nullptr;
        VIGIL_CUDA_CHECK(e);
      }
    }
  }
  ~PinnedBuffer() {
    if (host_) cudaFreeHost(host_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : host_(o.host_), device_(o.device_), bytes_(o.bytes_) {
    o.host_ = o.device_ = nullptr;
  }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (host_) cudaFreeHost(host_);
      host_ = o.host_, device_ = o.device_, bytes_ = o.bytes_;
      o.host_ = o.device_ = nullptr;
    }
    return *this;
  }

  template <typename T = void>
  T* host() const noexcept { return static_cast<T*>(host_); }
  template <typename T = void>
  T* device() const noexcept { return static_cast<T*>(device_); }  // mapped mode only
  size_t bytes() const noexcept { return bytes_; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  size_t bytes_ = 0;
};

// True when device 0 shares memory with the host (Jetson): mapped memory costs no copy there.
inline bool device_is_integrated() {
  int dev = 0, integrated = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, dev) != cudaSuccess) return false;
  return integrated != 0;
}

}  // namespace vigil::cuda
