// DeviceBuffer: device memory (cudaMalloc) owned for its lifetime. Host C++ only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws CudaError when the memory cannot be had.
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { VIGIL_CUDA_CHECK(cudaMalloc(&data_, bytes)); }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (data_) cudaFree(data_);
      data_ = o.data_, bytes_ = o.bytes_;
      o.data_ = nullptr;
    }
    return *this;
  }

  template <typename T = void>
  T* get() const noexcept { return static_cast<T*>(data_); }
  size_t bytes() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace vigil::cuda
