// Full convolution on the GPU against the CPU's (itself tested against the definition).
#include "cuda/convolve_cuda.hpp"

#include <gtest/gtest.h>

#include "../support/tolerances.hpp"

#include <cmath>
#include <random>

#include "cuda/convolve_direct.cuh"
#include "cuda/cuda_check.hpp"
#include "dsp/convolution.hpp"

namespace vigil {
namespace {

TEST(ConvolveCuda, EqualsTheCpuConvolution) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  std::mt19937 rng(12);
  std::normal_distribution<float> d;
  for (const auto& [n, m] : std::vector<std::pair<size_t, size_t>>{
           {1, 1}, {7, 3}, {3, 7}, {1000, 64}, {100000, 513}, {2000000, 1024}, {50000, 8192}}) {
    std::vector<float> x(n), h(m);
    for (auto& v : x) v = d(rng);
    for (auto& v : h) v = d(rng) / std::sqrt(float(m));
    std::vector<float> want(n + m - 1), got(n + m - 1, std::nanf(""));
    convolve_full(x.data(), n, h.data(), m, want.data());
    cuda::convolve_full_cuda(x.data(), n, h.data(), m, got.data());
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << n << "x" << m << " index " << i;
      num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      den += double(want[i]) * want[i];
    }
    EXPECT_LE(std::sqrt(num / den), test::kGpuVsCpuRelL2) << n << "x" << m;
  }
}

// The direct kernels (tiled, and the 2010 paper's naive one kept as the benchmark's comparison)
// against the CPU convolution: sizes around the tiles (288 and 2304 outputs) and the unroll by 9, taps up to
// the kernel's limit; outputs poisoned with NaN before every launch.
TEST(ConvolveCuda, DirectKernelsEqualTheCpuConvolution) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> d;
  for (const auto& [n, m] : std::vector<std::pair<size_t, uint32_t>>{
           {1, 1}, {1, 9}, {5, 17}, {2304, 8}, {2305, 64}, {10000, 512}, {4607, 4096}, {100000, 63}, {33, 1000},
           {700001, 512}}) {  // the last one large enough for the unsplit kernel
    std::vector<float> x(n), h(m);
    for (auto& v : x) v = d(rng);
    for (auto& v : h) v = d(rng) / std::sqrt(float(m));
    const size_t n_out = n + m - 1;
    std::vector<float> want(n_out);
    convolve_full(x.data(), n, h.data(), m, want.data());
    float *d_x = nullptr, *d_h = nullptr, *d_y = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_x), n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_h), m * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_y), n_out * sizeof(float)), cudaSuccess);
    cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(d_h, h.data(), m * sizeof(float), cudaMemcpyHostToDevice);
    for (bool tiled : {true, false}) {
      cudaMemset(d_y, 0xFF, n_out * sizeof(float));  // NaN poison
      ASSERT_EQ(tiled ? cuda::launch_convolve_full_tiled(d_x, n, d_h, m, d_y, nullptr)
                      : cuda::launch_convolve_full_naive(d_x, n, d_h, m, d_y, nullptr),
                cudaSuccess);
      std::vector<float> got(n_out);
      ASSERT_EQ(cudaMemcpy(got.data(), d_y, n_out * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      double num = 0, den = 0;
      for (size_t i = 0; i < n_out; ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << n << "x" << m << (tiled ? " tiled" : " naive") << " index " << i;
        num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        den += double(want[i]) * want[i];
      }
      EXPECT_LE(std::sqrt(num / den), test::kGpuVsCpuRelL2) << n << "x" << m << (tiled ? " tiled" : " naive");
    }
    cudaFree(d_x);
    cudaFree(d_h);
    cudaFree(d_y);
  }
  float* p = nullptr;
  EXPECT_EQ(cuda::launch_convolve_full_tiled(p, 10, p, cuda::kConvolveMaxTaps + 1, p, nullptr), cudaErrorInvalidValue);
}

TEST(ConvolveCuda, RejectsEmptyInputs) {
  float v = 1.0f, y = 0.0f;
  EXPECT_THROW(cuda::convolve_full_cuda(&v, 0, &v, 1, &y), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
