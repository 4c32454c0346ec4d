// The per-lane chunk statistics kernel against its CPU twin vibration_stats(): random lanes with
// a DC offset and planted spikes, lengths from 1 to 2^20, NaN-poisoned outputs.
#include "cuda/lane_stats.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../support/signals.hpp"
#include "cuda/cuda_check.hpp"
#include "dsp/vibration_stats.hpp"

namespace vigil {
namespace {

TEST(LaneStatsCuda, EqualsVibrationStatsForEveryLaneAndLength) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  for (const auto& [n, lanes] : std::vector<std::pair<uint32_t, uint32_t>>{
           {1, 1}, {2, 3}, {7, 5}, {255, 16}, {1000, 64}, {65536, 8}, {1u << 20, 2}}) {
    const size_t stride = n + 13;  // rows not packed: the stride is honoured
    std::vector<float> x = test::randn(stride * lanes, n * 7 + lanes);
    std::mt19937 rng(n);
    for (uint32_t l = 0; l < lanes; ++l) {
      for (uint32_t i = 0; i < n; ++i) x[l * stride + i] = 0.5f * float(l) + x[l * stride + i] * (1.0f + 0.1f * float(l));
      x[l * stride + rng() % n] += 8.0f;  // a spike: kurtosis well above 3
    }
    if (lanes > 2) std::fill_n(x.begin() + 2 * stride, n, 0.25f);  // a constant lane: kurtosis 0
    cuda::LaneStats* d_out = nullptr;
    float* d_x = nullptr;
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), lanes * sizeof(cuda::LaneStats)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, lanes * sizeof(cuda::LaneStats)));  // NaN poison
    ASSERT_EQ(cuda::launch_lane_stats(d_x, stride, n, lanes, d_out, nullptr), cudaSuccess);
    std::vector<cuda::LaneStats> got(lanes);
    VIGIL_CUDA_CHECK(cudaMemcpy(got.data(), d_out, lanes * sizeof(cuda::LaneStats), cudaMemcpyDeviceToHost));
    cudaFree(d_x);
    cudaFree(d_out);
    for (uint32_t l = 0; l < lanes; ++l) {
      const VibrationStats want = vibration_stats(x.data() + l * stride, n);
      // Both sum in double, in different orders: agreement to 1e-9 relative.
      auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); };
      EXPECT_TRUE(near(got[l].rms, want.rms)) << n << " lane " << l << ": " << got[l].rms << " vs " << want.rms;
      EXPECT_EQ(got[l].peak, want.peak) << n << " lane " << l;
      EXPECT_EQ(got[l].peak_to_peak, want.peak_to_peak) << n << " lane " << l;
      EXPECT_TRUE(near(got[l].crest_factor, want.crest_factor)) << n << " lane " << l;
      EXPECT_TRUE(near(got[l].kurtosis, want.kurtosis)) << n << " lane " << l << ": " << got[l].kurtosis << " vs "
                                                       << want.kurtosis;
    }
  }
}

}  // namespace
}  // namespace vigil
