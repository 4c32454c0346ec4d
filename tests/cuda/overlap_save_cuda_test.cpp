// The batched single-block overlap-save on the GPU against its CPU twin
// (PartitionedFirBank::single_block): same latency, random chunk sizes, NaN-poisoned outputs.
#include "cuda/overlap_save_cuda.hpp"

#include <gtest/gtest.h>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"

#include <cmath>
#include <random>

#include "cuda/cuda_check.hpp"
#include "dsp/partitioned_fir_bank.hpp"

namespace vigil {
namespace {

using test::max_abs;
using test::randn;
using test::rel_l2;


// Two bands of different lengths (the callback's second band lies a band stride on), random
// chunk sizes (0 included) through the streaming history, against the CPU twin.
void expect_the_cpu_single_block_layout(bool fuse_multiply) {
  std::mt19937 rng(8);
  const uint32_t channels = 3, total = 30000;
  for (const auto& [len, fft] : std::vector<std::pair<size_t, uint32_t>>{
           {1, 32}, {31, 32}, {64, 512}, {255, 1024}, {1000, 1024}, {1000, 8192}, {8192, 16384}, {5000, 32768}}) {
    const std::vector<std::vector<float>> taps = {randn(len, uint32_t(len), 1.0f / std::sqrt(float(len))),
                                                  randn(len / 3 + 1, 7, 0.2f)};
    const std::vector<float> x = randn(size_t(channels) * total, 11);
    PartitionedFirBank cpu(taps, channels, PartitionedFirBank::single_block(len, fft));
    std::vector<float> want(2 * size_t(channels) * total);
    cpu.process(x.data(), total, total, want.data(), total);

    const uint32_t max_chunk = 4000;
    cuda::OverlapSaveCuda gpu(taps, channels, fft, max_chunk, nullptr, fuse_multiply);
    ASSERT_EQ(gpu.latency_frames(), cpu.latency_frames());
#if CUDART_VERSION >= 13000
    // CUDA 13 builds the callback (cuda/CMakeLists.txt): planning with it must not fall back.
    ASSERT_EQ(gpu.fused_multiply(), fuse_multiply && fft >= cuda::OverlapSaveCuda::kFuseFromFftSize)
        << "taps " << len << " fft " << fft;
#else
    ASSERT_FALSE(gpu.fused_multiply());
#endif
    float *d_in = nullptr, *d_out = nullptr;
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), want.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, want.size() * sizeof(float)));  // NaN poison
    std::uniform_int_distribution<uint32_t> size_dist(0, max_chunk);
    for (uint32_t at = 0; at < total;) {
      const uint32_t n = std::min(size_dist(rng), total - at);
      ASSERT_EQ(gpu.process(d_in + at, total, n, d_out + at, total), cudaSuccess);
      at += n;
    }
    std::vector<float> got(want.size());
    VIGIL_CUDA_CHECK(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(d_in);
    cudaFree(d_out);
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "index " << i << " never written";
      num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      den += double(want[i]) * want[i];
    }
    EXPECT_LE(std::sqrt(num / den), test::kGpuVsCpuRelL2) << "taps " << len << " fft " << fft;
  }
}

TEST(OverlapSaveCuda, MatchesTheCpuSingleBlockLayout) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  expect_the_cpu_single_block_layout(true);
}

TEST(OverlapSaveCuda, MatchesTheCpuWithTheMultiplyInAPassOfItsOwn) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  expect_the_cpu_single_block_layout(false);
}

TEST(OverlapSaveCuda, RejectsBadParameters) {
  EXPECT_THROW(cuda::OverlapSaveCuda({{1.0f}}, 1, 48, 16), std::invalid_argument);
  EXPECT_THROW(cuda::OverlapSaveCuda({std::vector<float>(64, 1.0f)}, 1, 64, 16), std::invalid_argument);
  EXPECT_THROW(cuda::OverlapSaveCuda({}, 1, 64, 16), std::invalid_argument);
  EXPECT_THROW(cuda::OverlapSaveCuda({{1.0f}}, 0, 64, 16), std::invalid_argument);
  EXPECT_THROW(cuda::OverlapSaveCuda({{1.0f}}, 1, 64, 0), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
