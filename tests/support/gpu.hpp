// For CUDA tests: skip with the reason where no GPU answers, and device arrays that start poisoned
// (every byte 0xFF: NaN for floats and doubles) so an output never written shows.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"

#define VIGIL_SKIP_WITHOUT_GPU()                                                                       \
  do {                                                                                                 \
    std::string vigil_why_;                                                                            \
    if (!::vigil::cuda::device_available(&vigil_why_))                                                 \
      GTEST_SKIP() << "no usable CUDA device (" << vigil_why_ << "): GPU tests run in scripts/gpu-check.sh"; \
  } while (0)

namespace vigil::test {

template <typename T>
struct DeviceArray {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceArray(size_t count) : n(count) {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(count, 1) * sizeof(T)));
    VIGIL_CUDA_CHECK(cudaMemset(p, 0xFF, std::max<size_t>(count, 1) * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void put(const std::vector<T>& v) {
    VIGIL_CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  // Waits for the device, then copies back.
  std::vector<T> get() const {
    std::vector<T> v(n);
    VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
    VIGIL_CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
};

// Fails (once) at the first value that is not finite: an output left unwritten (poisoned).
template <typename T>
void expect_all_finite(const std::vector<T>& v, const std::string& what) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(double(v[i]))) {
      ADD_FAILURE() << what << ": index " << i << " not written";
      return;
    }
}

}  // namespace vigil::test
