// The CUDA partitioned FIR bank against its CPU twin (same layout, same latency) and against the
// direct-form specification; device outputs poisoned with NaN before every run.
#include "cuda/fir_bank_cuda.hpp"

#include <gtest/gtest.h>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"

#include <cmath>
#include <random>

#include "cuda/cuda_check.hpp"
#include "dsp/fir_bank.hpp"
#include "dsp/partitioned_fir_bank.hpp"

namespace vigil {
namespace {

using test::max_abs;
using test::randn;
using test::rel_l2;

class FirBankCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  }
};



// Runs the CUDA bank over x (planar, channels x total) in random chunk sizes; returns planar
// bands x channels x total.
std::vector<float> run_cuda(cuda::FirBankCuda& bank, const std::vector<float>& x, uint32_t channels, uint32_t total,
                            uint32_t max_chunk, std::mt19937& rng) {
  const uint32_t lanes = bank.bands() * channels;
  float *d_in = nullptr, *d_out = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), size_t(lanes) * total * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, size_t(lanes) * total * sizeof(float)));  // NaN poison
  std::uniform_int_distribution<uint32_t> size_dist(0, max_chunk);
  for (uint32_t at = 0; at < total;) {
    const uint32_t n = std::min(size_dist(rng), total - at);
    EXPECT_EQ(bank.process(d_in + at, total, n, d_out + at, total), cudaSuccess);
    at += n;
  }
  VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> y(size_t(lanes) * total);
  VIGIL_CUDA_CHECK(cudaMemcpy(y.data(), d_out, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(d_in);
  cudaFree(d_out);
  return y;
}

TEST_F(FirBankCudaTest, MatchesTheCpuTwinForEveryLengthAndChunking) {
  std::mt19937 rng(17);
  const uint32_t channels = 3, total = 20000;
  for (uint32_t block : {16u, 256u, 1024u})
    for (size_t len : {size_t(1), size_t(block - 1), size_t(block), size_t(block + 1), size_t(1000), size_t(8192)}) {
      const std::vector<std::vector<float>> taps = {randn(len, uint32_t(len), 1.0f / std::sqrt(float(len))),
                                                    randn(len / 2 + 1, 5, 0.1f)};
      const std::vector<float> x = randn(size_t(channels) * total, 99);
      PartitionedFirBank cpu(taps, channels, PartitionedFirBank::uniform(block));
      std::vector<float> want(2 * size_t(channels) * total);
      cpu.process(x.data(), total, total, want.data(), total);
      cuda::FirBankCuda gpu(taps, channels, block);
      EXPECT_EQ(gpu.latency_frames(), cpu.latency_frames());
      const std::vector<float> got = run_cuda(gpu, x, channels, total, 3 * block + 7, rng);
      for (float v : got) ASSERT_TRUE(std::isfinite(v)) << "an output was never written (NaN poison)";
      const double err = rel_l2(got, want);
      EXPECT_LE(err, test::kGpuVsCpuRelL2) << "block " << block << " taps " << len;
    }
}

TEST_F(FirBankCudaTest, EqualsTheDirectFormDelayedByOneBlock) {
  std::mt19937 rng(2);
  const uint32_t channels = 2, total = 8192, block = 128;
  const std::vector<std::vector<float>> taps = {randn(300, 1, 0.05f)};
  const std::vector<float> x = randn(size_t(channels) * total, 3);
  FirBank direct(taps, channels, total);
  std::vector<float> ref(size_t(channels) * total);
  direct.process(x.data(), total, total, ref.data(), total);
  cuda::FirBankCuda gpu(taps, channels, block);
  const std::vector<float> got = run_cuda(gpu, x, channels, total, 1000, rng);
  std::vector<float> a, b;
  for (uint32_t c = 0; c < channels; ++c)
    for (uint32_t i = block; i < total; ++i) {
      a.push_back(got[size_t(c) * total + i]);
      b.push_back(ref[size_t(c) * total + i - block]);
    }
  EXPECT_LE(rel_l2(a, b), test::kGpuVsCpuRelL2);
  for (uint32_t c = 0; c < channels; ++c)
    for (uint32_t i = 0; i < block; ++i) EXPECT_EQ(got[size_t(c) * total + i], 0.0f);
}

// Full chunks of whole blocks go through in one batch (one partition); other chunks block by
// block. Chunks of either kind in random order, from a block boundary or not, give the CPU twin's
// output and leave the state each other expects.
TEST_F(FirBankCudaTest, BatchedChunksMatchTheCpuTwinMixedWithOthers) {
  std::mt19937 rng(23);
  const uint32_t channels = 3, block = 256, batch = 4 * block, total = 40 * batch;
  for (size_t len : {size_t(1), size_t(100), size_t(block - 1), size_t(block)}) {
    const std::vector<std::vector<float>> taps = {randn(len, uint32_t(len) + 3, 1.0f / std::sqrt(float(len))),
                                                  randn(len, 7, 0.1f)};
    const std::vector<float> x = randn(size_t(channels) * total, uint32_t(len) + 40);
    PartitionedFirBank cpu(taps, channels, PartitionedFirBank::uniform(block));
    std::vector<float> want(2 * size_t(channels) * total);
    cpu.process(x.data(), total, total, want.data(), total);
    cuda::FirBankCuda gpu(taps, channels, block, nullptr, batch);
    ASSERT_EQ(gpu.batch_blocks(), 4u);
    float *d_in = nullptr, *d_out = nullptr;
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), want.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, want.size() * sizeof(float)));  // NaN poison
    std::uniform_int_distribution<uint32_t> kind(0, 3), odd(1, 3 * block);
    uint32_t batched = 0;
    for (uint32_t at = 0; at < total;) {
      // Mostly full chunks; now and then one of another length, which leaves a block unfinished
      // (full chunks then go block by block) until a chunk finishes it.
      const uint32_t k = kind(rng);
      uint32_t n = k == 0 ? odd(rng) : k == 1 && gpu.fill() ? block - gpu.fill() : batch;
      n = std::min(n, total - at);
      if (n == batch && gpu.fill() == 0) ++batched;
      ASSERT_EQ(gpu.process(d_in + at, total, n, d_out + at, total), cudaSuccess);
      at += n;
    }
    VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(want.size());
    VIGIL_CUDA_CHECK(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    cudaFree(d_in);
    cudaFree(d_out);
    EXPECT_GE(batched, 5u) << "too few chunks took the batch for the test to mean anything";
    for (float v : got) ASSERT_TRUE(std::isfinite(v)) << "an output was never written (NaN poison)";
    EXPECT_LE(rel_l2(got, want), test::kGpuVsCpuRelL2) << "taps " << len;
  }
}

// More than one partition, or no batch asked for: block by block.
TEST(FirBankCuda, BatchesOnlyWithOnePartition) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << ")";
  EXPECT_EQ(cuda::FirBankCuda({std::vector<float>(257, 0.1f)}, 2, 256, nullptr, 1024).batch_blocks(), 0u);
  EXPECT_EQ(cuda::FirBankCuda({std::vector<float>(255, 0.1f)}, 2, 256, nullptr, 0).batch_blocks(), 0u);
  EXPECT_EQ(cuda::FirBankCuda({std::vector<float>(255, 0.1f)}, 2, 256, nullptr, 256).batch_blocks(), 0u);
  EXPECT_EQ(cuda::FirBankCuda({std::vector<float>(255, 0.1f)}, 2, 256, nullptr, 1024).batch_blocks(), 4u);
}

// Argument checks happen before any CUDA call: this runs without a GPU too.
TEST(FirBankCuda, RejectsBadParameters) {
  EXPECT_THROW(cuda::FirBankCuda({{1.0f}}, 1, 48), std::invalid_argument);
  EXPECT_THROW(cuda::FirBankCuda({}, 1, 64), std::invalid_argument);
  EXPECT_THROW(cuda::FirBankCuda({{}}, 1, 64), std::invalid_argument);
  EXPECT_THROW(cuda::FirBankCuda({{1.0f}}, 0, 64), std::invalid_argument);
  EXPECT_THROW(cuda::FirBankCuda(std::vector<std::vector<float>>(17, {1.0f}), 4096, 64), std::invalid_argument);
}

TEST(FirBankCuda, PrefersOnePartitionAndAOnePassFft) {
  EXPECT_EQ(cuda::FirBankCuda::preferred_block(255), 4096u);
  EXPECT_EQ(cuda::FirBankCuda::preferred_block(4096), 4096u);
  EXPECT_EQ(cuda::FirBankCuda::preferred_block(5000), 8192u);
  EXPECT_EQ(cuda::FirBankCuda::preferred_block(size_t(1) << 20), 65536u);
}

}  // namespace
}  // namespace vigil
