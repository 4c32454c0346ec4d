// The per-lane run moments kernel against its CPU twin moments_of(): random lanes with a DC offset
// and planted spikes, runs of 1 sample to 2^20, several cuts per chunk, rows not packed,
// NaN-poisoned outputs; and the window statistics merged from the runs against
// vibration_stats() over the whole lane.
#include "cuda/lane_moments.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"
#include "dsp/vibration_stats.hpp"
#include "dsp/window_moments.hpp"

namespace vigil {
namespace {

// Both sum in double, in different orders: agreement to 1e-9 relative (of the sum's scale).
bool near(double got, double want, double scale) { return std::fabs(got - want) <= test::kMergedMomentsRel * std::max(scale, 1e-300); }

TEST(LaneMomentsCuda, EqualMomentsOfEveryRunOfEveryLane) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  struct Case {
    uint32_t lanes;
    std::vector<uint32_t> runs;  // lengths
  };
  const std::vector<Case> cases = {{1, {1}},           {3, {2, 1, 5}},          {5, {7}},
                                   {16, {255, 1, 64}}, {64, {1000, 24, 1024}}, {8, {65536}},
                                   {2, {1u << 20}},    {37, std::vector<uint32_t>(64, 33)}};
  for (const Case& c : cases) {
    cuda::RunSplit split;
    split.runs = uint32_t(c.runs.size());
    for (uint32_t r = 0; r < split.runs; ++r) split.start[r + 1] = split.start[r] + c.runs[r];
    const uint32_t n = split.start[split.runs];
    const size_t stride = n + 13;  // rows not packed: the stride is honoured
    std::vector<float> x = test::randn(stride * c.lanes, n * 7 + c.lanes);
    std::mt19937 rng(n);
    for (uint32_t l = 0; l < c.lanes; ++l) {
      for (uint32_t i = 0; i < n; ++i) x[l * stride + i] = 0.5f * float(l) + x[l * stride + i] * (1.0f + 0.1f * float(l));
      x[l * stride + rng() % n] += 8.0f;  // a spike: kurtosis well above 3
    }
    if (c.lanes > 2) std::fill_n(x.begin() + 2 * stride, n, 0.25f);  // a constant lane: no spread at all
    const size_t outs = size_t(c.lanes) * split.runs;
    Moments* d_out = nullptr;
    float* d_x = nullptr;
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), outs * sizeof(Moments)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, outs * sizeof(Moments)));  // NaN poison
    ASSERT_EQ(cuda::launch_lane_moments(d_x, stride, c.lanes, split, d_out, nullptr), cudaSuccess);
    std::vector<Moments> got(outs);
    VIGIL_CUDA_CHECK(cudaMemcpy(got.data(), d_out, outs * sizeof(Moments), cudaMemcpyDeviceToHost));
    cudaFree(d_x);
    cudaFree(d_out);
    for (uint32_t l = 0; l < c.lanes; ++l) {
      Moments merged;
      for (uint32_t r = 0; r < split.runs; ++r) {
        const float* run = x.data() + l * stride + split.start[r];
        const Moments want = moments_of(run, c.runs[r]);
        const Moments& g = got[size_t(l) * split.runs + r];
        SCOPED_TRACE("lanes " + std::to_string(c.lanes) + " n " + std::to_string(n) + " lane " + std::to_string(l) +
                     " run " + std::to_string(r));
        EXPECT_EQ(g.n, want.n);
        EXPECT_EQ(g.lo, want.lo);
        EXPECT_EQ(g.hi, want.hi);
        // Scales: the mean against the run's spread and offset, each central sum against the sum
        // of |x - mean|^k it is made of (m3 cancels: its scale is m2^1.5 n^-0.5 and more).
        const double spread = std::sqrt(want.m2 / want.n) + std::fabs(want.mean);
        EXPECT_TRUE(near(g.mean, want.mean, spread)) << g.mean << " vs " << want.mean;
        EXPECT_TRUE(near(g.m2, want.m2, want.m2 + want.n * spread * spread * 1e-6)) << g.m2 << " vs " << want.m2;
        EXPECT_TRUE(near(g.m3, want.m3, std::sqrt(want.m2 * want.m4) + want.n * std::pow(spread, 3) * 1e-6))
            << g.m3 << " vs " << want.m3;
        EXPECT_TRUE(near(g.m4, want.m4, want.m4 + want.n * std::pow(spread, 4) * 1e-6)) << g.m4 << " vs " << want.m4;
        merged = merge(merged, g);
      }
      // The window statistics from the kernel's runs equal those of the whole lane at once.
      const VibrationStats want = vibration_stats(x.data() + l * stride, n), s = stats_of(merged);
      EXPECT_TRUE(near(s.rms, want.rms, want.rms)) << s.rms << " vs " << want.rms;
      EXPECT_EQ(s.peak, want.peak);
      EXPECT_EQ(s.peak_to_peak, want.peak_to_peak);
      EXPECT_TRUE(near(s.kurtosis, want.kurtosis, std::max(want.kurtosis, 1.0))) << s.kurtosis << " vs " << want.kurtosis;
    }
  }
}

// One launch reading its starts from a cell, captured once and replayed for chunks cut at
// different places into the same number of runs: each replay gives, to the bit, what a launch with
// that split given by value gives (the same device code; only where the bounds come from differs).
TEST(LaneMomentsCuda, AGraphReplayedWithTheStartsInACellEqualsTheSplitGivenByValue) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  constexpr uint32_t kLanes = 64, kFrames = 1024, kStride = kFrames + 5;
  std::vector<float> x = test::randn(size_t(kStride) * kLanes, 2026);
  for (uint32_t l = 0; l < kLanes; ++l) x[size_t(l) * kStride + (l * 37) % kFrames] += 6.0f;
  float* d_x = nullptr;
  Moments* d_out = nullptr;
  const size_t outs = size_t(kLanes) * 2;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), outs * sizeof(Moments)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  // As MomentsCudaStage does: the graph copies the page-locked cell to the device, then launches.
  cuda::PinnedBuffer cell((cuda::RunSplit::kMaxRuns + 1) * sizeof(uint32_t), false);
  cuda::DeviceBuffer d_cell(cell.bytes());
  cudaStream_t stream = nullptr;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  VIGIL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const cudaError_t copied = cudaMemcpyAsync(d_cell.get(), cell.host(), 3 * sizeof(uint32_t), cudaMemcpyHostToDevice, stream);
  const cudaError_t launched = cuda::launch_lane_moments_from_cell(d_x, kStride, kLanes, 2, d_cell.get<uint32_t>(), d_out, stream);
  VIGIL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  ASSERT_EQ(copied, cudaSuccess);
  ASSERT_EQ(launched, cudaSuccess);
  VIGIL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaGraphDestroy(graph);
  std::mt19937 rng(7);
  for (int replay = 0; replay < 6; ++replay) {
    cuda::RunSplit split;
    split.runs = 2;
    split.start[1] = replay == 0 ? 1 : replay == 1 ? kFrames - 1 : 1 + uint32_t(rng() % (kFrames - 1));
    split.start[2] = replay == 2 ? kFrames - 3 : kFrames;  // a short chunk too
    ASSERT_TRUE(cuda::valid_split(split));
    std::memcpy(cell.host<uint32_t>(), split.start, 3 * sizeof(uint32_t));
    std::vector<Moments> got(outs), want(outs);
    VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, outs * sizeof(Moments)));  // NaN poison
    VIGIL_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
    VIGIL_CUDA_CHECK(cudaMemcpy(got.data(), d_out, outs * sizeof(Moments), cudaMemcpyDeviceToHost));
    VIGIL_CUDA_CHECK(cudaMemset(d_out, 0xFF, outs * sizeof(Moments)));
    ASSERT_EQ(cuda::launch_lane_moments(d_x, kStride, kLanes, split, d_out, stream), cudaSuccess);
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
    VIGIL_CUDA_CHECK(cudaMemcpy(want.data(), d_out, outs * sizeof(Moments), cudaMemcpyDeviceToHost));
    SCOPED_TRACE("replay " + std::to_string(replay) + ", cut at " + std::to_string(split.start[1]));
    EXPECT_EQ(std::memcmp(got.data(), want.data(), outs * sizeof(Moments)), 0);
    // And the by-value launch is the twin's (the test above): here the count of each run.
    EXPECT_EQ(got[0].n, double(split.start[1]));
    EXPECT_EQ(got[1].n, double(split.start[2] - split.start[1]));
    EXPECT_EQ(got[2 * 5 + 1].hi, *std::max_element(x.begin() + 5 * kStride + split.start[1], x.begin() + 5 * kStride + split.start[2]));
  }
  cudaGraphExecDestroy(exec);
  cudaStreamDestroy(stream);
  cudaFree(d_x);
  cudaFree(d_out);
}

TEST(LaneMomentsCuda, RejectsASplitOutOfRange) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  cuda::RunSplit split;  // no runs
  EXPECT_EQ(cuda::launch_lane_moments(nullptr, 1, 1, split, nullptr, nullptr), cudaErrorInvalidValue);
  split.runs = 2;
  split.start[1] = 4;
  split.start[2] = 4;  // an empty run
  EXPECT_EQ(cuda::launch_lane_moments(nullptr, 8, 1, split, nullptr, nullptr), cudaErrorInvalidValue);
  split.runs = cuda::RunSplit::kMaxRuns + 1;
  EXPECT_EQ(cuda::launch_lane_moments(nullptr, 8, 1, split, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_FALSE(cuda::valid_split(split));
  // From a cell: the number of runs, and a cell to read.
  const uint32_t starts[3] = {0, 4, 8};
  EXPECT_EQ(cuda::launch_lane_moments_from_cell(nullptr, 8, 1, 0, starts, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_lane_moments_from_cell(nullptr, 8, 1, cuda::RunSplit::kMaxRuns + 1, starts, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::launch_lane_moments_from_cell(nullptr, 8, 1, 2, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace vigil
