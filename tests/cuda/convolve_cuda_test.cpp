// Full convolution on the GPU against the CPU's (itself tested against the definition).
#include "cuda/convolve_cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

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
    EXPECT_LE(std::sqrt(num / den), 1e-5) << n << "x" << m;
  }
}

TEST(ConvolveCuda, RejectsEmptyInputs) {
  float v = 1.0f, y = 0.0f;
  EXPECT_THROW(cuda::convolve_full_cuda(&v, 0, &v, 1, &y), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
