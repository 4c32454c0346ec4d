// StagedInputHistory against the host's InputHistory: chunks of random sizes and random samples
// written from device memory into the ring, by kernel (up to 256 KiB a chunk, also replayed from a
// captured CUDA graph after arm()) and through the snapshot and side stream (larger), keep the
// same newest frames, to the bit, as InputHistory::remember() of the same chunks on the host; a
// chunk enqueued and then discarded (it failed) leaves them as they were. Skipped where no GPU
// answers.
#include "stages/staged_input_history.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../support/gpu.hpp"

namespace vigil {
namespace {

struct Shape {
  uint32_t lanes, keep, max_frames;
  bool by_kernel;
};
void PrintTo(const Shape& s, std::ostream* os) {
  *os << s.lanes << " lanes, " << s.keep << " kept, chunks of " << s.max_frames << (s.by_kernel ? ", by kernel" : ", side copy");
}

std::vector<float> random_chunk(std::mt19937& rng, uint32_t lanes, uint32_t max_frames) {
  std::normal_distribution<float> n;
  std::vector<float> x(size_t(lanes) * max_frames);
  for (float& v : x) v = n(rng);
  return x;
}

void expect_same_newest(StagedInputHistory& got, const InputHistory& want, const Shape& s, uint32_t chunk) {
  std::vector<float> a(size_t(s.lanes) * s.keep, -1.0f), b(size_t(s.lanes) * s.keep, -2.0f);
  got.newest(s.keep, a.data(), s.keep);
  want.newest(s.keep, b.data(), s.keep);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "after chunk " << chunk << ", lane " << i / s.keep << " frame " << i % s.keep;
}

class StagedInputHistoryCuda : public ::testing::TestWithParam<Shape> {};

TEST_P(StagedInputHistoryCuda, KeepsTheHostRingsNewestFrames) {
  VIGIL_SKIP_WITHOUT_GPU();
  const Shape s = GetParam();
  StagedInputHistory got;
  got.assign(s.lanes, s.keep, s.max_frames, true);
  ASSERT_EQ(got.by_kernel(), s.by_kernel);
  InputHistory want;
  want.assign(s.lanes, s.keep);
  test::DeviceArray<float> src(size_t(s.lanes) * s.max_frames);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::mt19937 rng(s.lanes * 7919u + s.keep);
  // Full chunks, short ones, one frame, and enough of them to wrap the ring several times.
  std::uniform_int_distribution<uint32_t> size(1, s.max_frames);
  for (uint32_t k = 0; k < 24; ++k) {
    const uint32_t frames = k % 3 == 0 ? s.max_frames : k == 4 ? 1 : size(rng);
    const std::vector<float> x = random_chunk(rng, s.lanes, s.max_frames);
    src.put(x);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // (a pageable copy may return before it lands)
    got.discard();  // a new chunk starts
    ASSERT_EQ(got.enqueue(src.p, frames, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    if (k % 7 == 5) {  // this chunk failed: enqueued, never committed
      got.discard();
    } else {
      got.commit(Block{const_cast<float*>(x.data()), s.max_frames, frames, s.lanes, 1});
      want.remember(x.data(), s.max_frames, frames);
    }
    expect_same_newest(got, want, s, k);
    if (::testing::Test::HasFatalFailure()) break;
  }
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Shapes, StagedInputHistoryCuda,
                         ::testing::Values(Shape{3, 254, 4096, true},         // the direct FIR's M - 1 frames
                                           Shape{64, 10240, 1024, true},      // S2's FIR: 256 KiB a chunk
                                           Shape{5, 700, 256, true},          // history longer than a chunk
                                           Shape{16, 8192, 4096, true},       // exactly 256 KiB a chunk: by kernel
                                           Shape{17, 8192, 4096, false},      // 272 KiB: the side stream
                                           Shape{80, 8192, 4096, false}),     // 1.25 MiB a chunk: the side stream
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           return std::to_string(i.param.lanes) + "Lanes" + std::to_string(i.param.keep) + "Kept" +
                                  std::to_string(i.param.max_frames) + "AChunk";
                         });

// By kernel, captured once into a graph (between other work on the stream, as in the FIR stage's
// graph) and replayed for each chunk after arm(): the same newest frames as the host ring.
TEST(StagedInputHistoryCudaGraph, AReplayedGraphWritesWhereArmPointsIt) {
  VIGIL_SKIP_WITHOUT_GPU();
  constexpr uint32_t kLanes = 16, kKeep = 3000, kMax = 1024;
  StagedInputHistory got;
  got.assign(kLanes, kKeep, kMax, true);
  ASSERT_TRUE(got.by_kernel());
  InputHistory want;
  want.assign(kLanes, kKeep);
  test::DeviceArray<float> src(size_t(kLanes) * kMax), other(size_t(kLanes) * kMax);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(other.p, 0, size_t(kLanes) * kMax * sizeof(float), stream), cudaSuccess);
  ASSERT_EQ(got.enqueue(src.p, kMax, stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(other.p, src.p, size_t(kLanes) * kMax * sizeof(float), cudaMemcpyDeviceToDevice, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  got.discard();  // the capture was no chunk
  std::mt19937 rng(5);
  for (uint32_t k = 0; k < 10; ++k) {
    const std::vector<float> x = random_chunk(rng, kLanes, kMax);
    src.put(x);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // (a pageable copy may return before it lands)
    got.discard();
    got.arm(kMax);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    got.commit(Block{const_cast<float*>(x.data()), kMax, kMax, kLanes, 1});
    want.remember(x.data(), kMax, kMax);
    expect_same_newest(got, want, {kLanes, kKeep, kMax, true}, k);
    if (::testing::Test::HasFatalFailure()) break;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace vigil
