// The CUDA convert kernel against the CPU convert (the oracle): seeded random, full-scale and
// non-finite inputs, many sizes, poisoned outputs. Skips with the reason when no GPU is present.
#include "cuda/sample_convert_cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../support/tolerances.hpp"
#include "core/stream_format.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/sample_convert.cuh"

namespace vigil {
namespace {

class SampleConvertCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  }
};

template <typename T>
std::vector<T> random_samples(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::normal_distribution<float> d(0.0f, 0.6f);
    for (auto& x : v) x = d(rng);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 1.0f, -1.0f};
    for (size_t i = 0; i < n; i += 97) v[i] = specials[(i / 97) % 5];
  } else {
    std::uniform_int_distribution<int64_t> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    for (auto& x : v) x = T(d(rng));
    for (size_t i = 0; i < n; i += 89) v[i] = (i / 89) % 2 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    if constexpr (sizeof(T) == 4)  // 24-bit codes widened: full scale and one code inside it
      for (size_t i = 45; i < n; i += 89) v[i] = (i / 89) % 2 ? T(0x7FFFFF00) : T(0x7FFFFE00);
  }
  return v;
}

template <typename T>
void compare(SampleFormat format, uint32_t frames, uint32_t channels, uint32_t seed) {
  const std::vector<T> in = random_samples<T>(size_t(frames) * channels, seed);
  const float scale = full_scale_factor(format) * 1.7f;
  const size_t stride = frames + 3;
  std::vector<float> cpu(stride * channels, -777.0f), gpu(stride * channels, -777.0f);  // poison
  std::vector<ConvertCounts> cpu_counts(channels), gpu_counts(channels);
  convert_to_planar(in.data(), format, frames, channels, scale, cpu.data(), stride, cpu_counts.data());
  cuda::SampleConvertCuda conv(std::max(frames, 1u), channels);
  conv.convert(in.data(), format, frames, scale, gpu.data(), stride, gpu_counts.data());
  for (size_t i = 0; i < cpu.size(); ++i) {
    // Bit-identical (test::kConvertCudaAbs == 0): both sides do one float multiply.
    uint32_t a, b;
    std::memcpy(&a, &cpu[i], 4);
    std::memcpy(&b, &gpu[i], 4);
    ASSERT_EQ(a, b) << to_string(format) << " frames " << frames << " channels " << channels << ": index " << i
                    << " (channel " << i / stride << ", frame " << i % stride << ") expected " << cpu[i] << " got "
                    << gpu[i];
  }
  for (uint32_t c = 0; c < channels; ++c) {
    EXPECT_EQ(gpu_counts[c].clipped, cpu_counts[c].clipped) << "channel " << c;
    EXPECT_EQ(gpu_counts[c].non_finite, cpu_counts[c].non_finite) << "channel " << c;
  }
}

TEST_F(SampleConvertCudaTest, MatchesCpuForEveryFormatAndSize) {
  static_assert(test::kConvertCudaAbs == 0.0);
  uint32_t seed = 1;
  for (uint32_t channels : {1u, 2u, 3u, 4u, 8u, 64u, 1024u})
    for (uint32_t frames : {0u, 1u, 31u, 255u, 256u, 257u, 1024u, 1025u, 4099u}) {
      compare<int16_t>(SampleFormat::kInt16, frames, channels, seed++);
      compare<int32_t>(SampleFormat::kInt32, frames, channels, seed++);
      compare<float>(SampleFormat::kFloat32, frames, channels, seed++);
    }
  // A large chunk that exercises the grid-stride loop (more samples than 65535 blocks x 256).
  compare<int16_t>(SampleFormat::kInt16, 1u << 20, 32, 999);
  // Beyond 1024 channels, to the most a source may have: each block's counters (2 x channels) in
  // its shared memory, sized by the call.
  for (uint32_t channels : {1025u, 1300u, kMaxChannels}) {
    compare<int16_t>(SampleFormat::kInt16, 257, channels, seed++);
    compare<int32_t>(SampleFormat::kInt32, 4099, channels, seed++);
    compare<float>(SampleFormat::kFloat32, 1025, channels, seed++);
  }
}

TEST_F(SampleConvertCudaTest, CountsAccumulateAcrossCallsAndBadParametersAreRejected) {
  const std::vector<int16_t> in = {32767, 0, -32768, 5};
  std::vector<float> out(4);
  ConvertCounts counts;
  cuda::SampleConvertCuda conv(4, 1);
  conv.convert(in.data(), SampleFormat::kInt16, 4, 1.0f, out.data(), 4, &counts);
  conv.convert(in.data(), SampleFormat::kInt16, 4, 1.0f, out.data(), 4, &counts);
  EXPECT_EQ(counts.clipped, 4u);
  cuda::ConvertParams p;
  p.channels = 0;
  EXPECT_EQ(cuda::launch_convert_to_planar(p, nullptr), cudaErrorInvalidValue);
  EXPECT_THROW(cuda::SampleConvertCuda(0, 1), std::invalid_argument);
  EXPECT_THROW(cuda::SampleConvertCuda(16, kMaxChannels + 1), std::invalid_argument);
  EXPECT_THROW(conv.convert(in.data(), SampleFormat::kInt16, 5, 1.0f, out.data(), 5, &counts), std::invalid_argument);
}

// Through a cell (ConvertParams::d_in_cell): the kernel reads each chunk where a mapped cell points
// when it runs, from page-locked host memory allocated as the chunk pool's is (cudaHostAlloc,
// portable, not mapped); the same launch parameters convert two chunks in turn, each equal to the
// CPU conversion to the bit, with its counts.
TEST_F(SampleConvertCudaTest, ReadsEachChunkWhereACellPointsInPageLockedHostMemory) {
  constexpr uint32_t kFrames = 1024, kChannels = 64;
  const size_t n = size_t(kFrames) * kChannels;
  void* chunks[2] = {nullptr, nullptr};
  for (void*& c : chunks) ASSERT_EQ(cudaHostAlloc(&c, n * sizeof(int16_t), cudaHostAllocPortable), cudaSuccess);
  cuda::PinnedBuffer cell(sizeof(const void*), true);
  float* d_out = nullptr;
  unsigned long long* d_counts = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out), n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_counts), 2 * kChannels * sizeof(unsigned long long)), cudaSuccess);
  cuda::ConvertParams p;
  p.d_in_cell = cell.device<const void*>();
  p.format = SampleFormat::kInt16;
  p.frames = kFrames;
  p.channels = kChannels;
  p.scale = 1.0f / 32768;
  p.d_out = d_out;
  p.out_stride_frames = kFrames;
  p.d_counts = d_counts;
  for (int k = 0; k < 2; ++k) {
    const std::vector<int16_t> x = random_samples<int16_t>(n, 500 + k);
    std::memcpy(chunks[k], x.data(), n * sizeof(int16_t));
    *cell.host<const void*>() = chunks[k];
    ASSERT_EQ(cudaMemset(d_out, 0xFF, n * sizeof(float)), cudaSuccess);  // poison
    ASSERT_EQ(cudaMemset(d_counts, 0, 2 * kChannels * sizeof(unsigned long long)), cudaSuccess);
    ASSERT_EQ(cuda::launch_convert_to_planar(p, nullptr), cudaSuccess);
    std::vector<float> gpu(n), cpu(n);
    std::vector<unsigned long long> gpu_counts(2 * kChannels);
    ASSERT_EQ(cudaMemcpy(gpu.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gpu_counts.data(), d_counts, gpu_counts.size() * sizeof(unsigned long long),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    std::vector<ConvertCounts> cpu_counts(kChannels);
    convert_to_planar(x.data(), SampleFormat::kInt16, kFrames, kChannels, p.scale, cpu.data(), kFrames,
                      cpu_counts.data());
    ASSERT_EQ(std::memcmp(gpu.data(), cpu.data(), n * sizeof(float)), 0) << "chunk " << k;
    for (uint32_t c = 0; c < kChannels; ++c) {
      EXPECT_EQ(gpu_counts[2 * c], cpu_counts[c].clipped) << "chunk " << k << " channel " << c;
      EXPECT_EQ(gpu_counts[2 * c + 1], 0u);
    }
  }
  cudaFree(d_out);
  cudaFree(d_counts);
  for (void* c : chunks) cudaFreeHost(c);
}

}  // namespace
}  // namespace vigil
