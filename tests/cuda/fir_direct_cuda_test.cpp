// The CUDA direct-form FIR bank against its CPU twin dsp/FirBank (same form, no delay): bands of
// different lengths (1 tap up to the tiled kernel's limit, and longer through the split kernel), 1
// to 16 channels, random chunk sizes from 0 frames to longer than the longest filter, chunks
// shorter than the split kernel's sized for (several launches a call), chunked equal to one-shot,
// a tap swap mid-stream, both kernels; device outputs poisoned with NaN before every run; relative
// L2 error <= 1e-5.
#include "cuda/fir_direct_cuda.hpp"

#include <gtest/gtest.h>

#include <random>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"
#include "cuda/cuda_check.hpp"
#include "dsp/fir_bank.hpp"

namespace vigil {
namespace {

using test::randn;
using test::rel_l2;

class FirDirectCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  }
};

std::vector<std::vector<float>> bands_of(const std::vector<uint32_t>& lengths, uint32_t seed) {
  std::vector<std::vector<float>> taps;
  for (size_t b = 0; b < lengths.size(); ++b) taps.push_back(randn(lengths[b], seed + uint32_t(b), 0.1f));
  return taps;
}

// Both banks over x (planar, channels x total) in the same chunks (sizes from `sizes`, cycled);
// before chunk `swap_at` both take `next` taps. Returns {gpu, cpu}, planar bands x channels x total.
std::pair<std::vector<float>, std::vector<float>> run_both(const std::vector<std::vector<float>>& taps,
                                                           const std::vector<std::vector<float>>& next,
                                                           uint32_t channels, const std::vector<float>& x,
                                                           uint32_t total, const std::vector<uint32_t>& sizes,
                                                           size_t swap_at = ~size_t(0), uint32_t max_frames = 0,
                                                           bool split = false, uint32_t layout_channels = 0) {
  const uint32_t bands = uint32_t(taps.size()), lanes = bands * channels;
  cuda::FirDirectCuda gpu(taps, channels, nullptr, max_frames, layout_channels);
  EXPECT_EQ(gpu.split(), split);
  uint32_t max_chunk = 1;
  for (uint32_t s : sizes) max_chunk = std::max(max_chunk, s);
  FirBank cpu(taps, channels, max_chunk);
  float *d_in = nullptr, *d_out = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), size_t(lanes) * total * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, size_t(lanes) * total * sizeof(float)));  // NaN poison
  std::vector<float> want(size_t(lanes) * total);
  size_t k = 0;
  for (uint32_t at = 0; at < total; ++k) {
    const uint32_t n = std::min(sizes[k % sizes.size()], total - at);
    if (k == swap_at) {
      EXPECT_EQ(gpu.set_taps(next), cudaSuccess);
      cpu.set_taps(next, 1);  // from the next sample on
    }
    EXPECT_EQ(gpu.process(d_in + at, total, n, d_out + at, total), cudaSuccess);
    cpu.process(x.data() + at, total, n, want.data() + at, total);
    at += n;
  }
  VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> got(size_t(lanes) * total);
  VIGIL_CUDA_CHECK(cudaMemcpy(got.data(), d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(d_in);
  cudaFree(d_out);
  return {got, want};
}

TEST_F(FirDirectCudaTest, MatchesTheCpuTwinForEveryLengthAndChunking) {
  const uint32_t total = 30000;
  struct Case {
    std::vector<uint32_t> lengths;
    uint32_t channels;
    std::vector<uint32_t> sizes;
    uint32_t max_frames = 0;  // the split kernel where it is sized for short chunks or the taps are many
    bool split = false;
  };
  const std::vector<Case> cases = {
      {{1}, 1, {1, 7, 1000}},
      {{2, 1}, 3, {0, 1, 31, 33, 4096}},
      {{255}, 16, {65536}},                    // S1's filter in one shot
      {{255}, 16, {1000, 1, 2304, 2305, 17}},  // and in chunks around the kernel's tile
      {{63, 255, 17}, 5, {100, 3000, 1}},
      {{1024, 1023}, 2, {511, 1, 2000}},       // chunks shorter than the history
      {{4096, 300}, 2, {4095, 4097, 10}},      // the tiled kernel's limit
      {{8191, 5000, 1}, 2, {256, 1, 1000, 300}, 256, true},  // S3's length: split, chunks over the 288 it holds
      {{4097}, 1, {30000}, 0, true},                          // one past the tiled kernel: split, one shot
      {{255, 64}, 3, {256, 17, 5000}, 256, true},             // short chunks: split though the taps are few
      {{255, 64}, 8, {256, 17, 5000}, 65536, false},          // long chunks fill the GPU tiled
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("taps " + std::to_string(c.lengths[0]) + " channels " + std::to_string(c.channels) + " chunk " +
                 std::to_string(c.sizes[0]));
    const auto taps = bands_of(c.lengths, 5);
    const std::vector<float> x = randn(size_t(c.channels) * total, 11 + c.channels);
    const auto [got, want] = run_both(taps, taps, c.channels, x, total, c.sizes, ~size_t(0), c.max_frames, c.split);
    for (size_t lane = 0; lane < taps.size() * c.channels; ++lane) {
      const std::vector<float> g(got.begin() + lane * total, got.begin() + (lane + 1) * total);
      const std::vector<float> w(want.begin() + lane * total, want.begin() + (lane + 1) * total);
      EXPECT_LE(rel_l2(g, w), test::kGpuVsCpuRelL2) << "lane " << lane;
    }
  }
}

TEST_F(FirDirectCudaTest, ChunkedEqualsOneShotToTheBit) {
  const uint32_t total = 20000, channels = 4;
  const auto taps = bands_of({255, 64}, 9);
  const std::vector<float> x = randn(size_t(channels) * total, 3);
  const auto one = run_both(taps, taps, channels, x, total, {total}).first;
  const auto chunked = run_both(taps, taps, channels, x, total, {1, 999, 2304, 7}).first;
  EXPECT_EQ(one, chunked);  // every output sums the same products in the same order
  // The split kernel: the segments' sums added in segment order whichever block ends last, the
  // same in one launch of many tiles as in many launches of one.
  const auto long_taps = bands_of({8191, 300}, 12);
  const auto one_split = run_both(long_taps, long_taps, channels, x, total, {total}, ~size_t(0), 256, true).first;
  const auto chunked_split =
      run_both(long_taps, long_taps, channels, x, total, {1, 999, 288, 7, 256}, ~size_t(0), 256, true).first;
  EXPECT_EQ(one_split, chunked_split);
  const auto again = run_both(long_taps, long_taps, channels, x, total, {total}, ~size_t(0), 256, true).first;
  EXPECT_EQ(one_split, again);
}

// A bank over some of the channels laid out for all of them (a part of a stage split by channels:
// stages/channel_split_stage) gives those channels' bands to the bit. Laid out for its own few
// lanes, the split kernel would cut the taps into other segments and add them in another order.
TEST_F(FirDirectCudaTest, ABankLaidOutForMoreChannelsGivesTheirBandsToTheBit) {
  const uint32_t total = 12000, channels = 12, first = 5, count = 4;
  const auto taps = bands_of({2047, 300}, 31);
  const std::vector<float> x = randn(size_t(channels) * total, 17);
  const std::vector<float> part_x(x.begin() + size_t(first) * total, x.begin() + size_t(first + count) * total);
  const std::vector<uint32_t> sizes = {1024, 77, 1024};
  const auto whole = run_both(taps, taps, channels, x, total, sizes, ~size_t(0), 1024, true).first;
  const auto part = run_both(taps, taps, count, part_x, total, sizes, ~size_t(0), 1024, true, channels).first;
  const auto own = run_both(taps, taps, count, part_x, total, sizes, ~size_t(0), 1024, true).first;
  size_t differ = 0, differ_own = 0;
  for (uint32_t b = 0; b < taps.size(); ++b)
    for (uint32_t c = 0; c < count; ++c)
      for (uint32_t i = 0; i < total; ++i) {
        const float w = whole[(size_t(b) * channels + first + c) * total + i];
        differ += part[(size_t(b) * count + c) * total + i] != w;
        differ_own += own[(size_t(b) * count + c) * total + i] != w;
      }
  EXPECT_EQ(differ, 0u);
  EXPECT_GT(differ_own, 0u) << "the layouts of 4 and 12 channels cut the taps alike: the case proves nothing";
}

TEST_F(FirDirectCudaTest, ATapSwapTakesEffectFromTheNextCall) {
  const uint32_t total = 20000, channels = 3;
  const auto before = bands_of({255, 31}, 21), after = bands_of({200, 255}, 40);
  const std::vector<float> x = randn(size_t(channels) * total, 8);
  const auto [got, want] = run_both(before, after, channels, x, total, {1000, 333}, 7);
  EXPECT_LE(rel_l2(got, want), test::kGpuVsCpuRelL2);
  const auto long_before = bands_of({5000, 31}, 22), long_after = bands_of({4500, 5000}, 41);
  const auto [got_split, want_split] = run_both(long_before, long_after, channels, x, total, {256, 77}, 9, 256, true);
  EXPECT_LE(rel_l2(got_split, want_split), test::kGpuVsCpuRelL2);
}

TEST_F(FirDirectCudaTest, RejectsWhatDoesNotFit) {
  EXPECT_THROW(cuda::FirDirectCuda({}, 1), std::invalid_argument);
  EXPECT_THROW(cuda::FirDirectCuda({std::vector<float>(65537, 0.1f)}, 1), std::invalid_argument);
  EXPECT_THROW(cuda::FirDirectCuda({{1.0f}}, 0), std::invalid_argument);
  cuda::FirDirectCuda bank({std::vector<float>(100, 0.1f)}, 2);
  EXPECT_EQ(bank.set_taps({std::vector<float>(101, 0.1f)}), cudaErrorInvalidValue);  // longer than the history
  EXPECT_EQ(bank.set_taps({{0.5f}, {0.5f}}), cudaErrorInvalidValue);                  // another band count
  EXPECT_EQ(bank.latency_frames(), 0u);
}

}  // namespace
}  // namespace vigil
