// The graph's two-phase run (Graph::start, resume), on the CPU: a stage that queues "GPU work" in
// begin() gives the pipeline thread its wait between begin() and finish(), after begin() has
// returned; the stages after it wait for it; a stage that does its chunk in begin() (its CPU twin)
// gives no wait; a failure in either phase is the run's. The stages here stand in for CUDA stages
// (their "device" work is done in finish()); graph_cuda_test runs the real ones on a GPU.
#include "pipeline/graph.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "stages/block.hpp"

namespace vigil {
namespace {

constexpr uint32_t kFrames = 32, kChannels = 2;

// A shared log of what ran, in order: "begin x", "finish x", "wait", "process y".
using Trace = std::vector<std::string>;

// Output = input * gain, computed in finish() as a GPU stage's results come back after its wait.
// on_cpu: begin() does the chunk itself (a stage on its CPU twin). fail_in: "begin" or "finish".
class TwoPhaseStage final : public Stage, public GpuStage {
 public:
  TwoPhaseStage(std::string name, float gain, Trace& trace) : name_(std::move(name)), gain_(gain), trace_(trace) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t) override { return in; }
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override {
    return finish_now(in, out, exec);
  }
  void reset() noexcept override {}
  bool two_phase() const noexcept override { return true; }
  bool begin(const Block& in, Block& out, const Exec&, StageStatus& done) noexcept override {
    trace_.push_back("begin " + name_);
    if (fail_in == "begin") {
      done = StageStatus::kFailed;
      return false;
    }
    if (on_cpu) {
      scale(in, out);
      done = StageStatus::kOk;
      return false;
    }
    polls_left_ = polls;
    return true;
  }
  bool busy() noexcept override { return polls_left_ > 0 && polls_left_-- > 0; }
  StageStatus finish(const Block& in, Block& out, const Exec&) noexcept override {
    trace_.push_back("finish " + name_);
    if (fail_in == "finish") return StageStatus::kFailed;
    scale(in, out);
    return StageStatus::kOk;
  }
  bool on_cpu = false;
  std::string fail_in;
  int polls = 0;  // busy() says true this many times a chunk

 private:
  void scale(const Block& in, Block& out) noexcept {
    for (uint32_t l = 0; l < in.bands * in.channels; ++l)
      for (uint32_t i = 0; i < in.frames; ++i) out.data[l * out.stride + i] = in.data[l * in.stride + i] * gain_;
  }
  std::string name_;
  float gain_;
  Trace& trace_;
  int polls_left_ = 0;
};

// A plain (CPU) stage: output = input + 1.
class AddOne final : public Stage {
 public:
  explicit AddOne(Trace& trace) : trace_(trace) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t) override { return in; }
  StageStatus process(const Block& in, Block& out, const Exec&) noexcept override {
    trace_.push_back("process add");
    for (uint32_t l = 0; l < in.bands * in.channels; ++l)
      for (uint32_t i = 0; i < in.frames; ++i) out.data[l * out.stride + i] = in.data[l * in.stride + i] + 1.0f;
    return StageStatus::kOk;
  }
  void reset() noexcept override {}

 private:
  Trace& trace_;
};

struct Chain {
  Trace trace;
  TwoPhaseStage* a = nullptr;  // input -> a (x2) -> add (+1) -> b (x3)
  TwoPhaseStage* b = nullptr;
  std::unique_ptr<Graph> graph;
  std::vector<float> x;
};

std::unique_ptr<Chain> chain() {
  auto c = std::make_unique<Chain>();
  auto a = std::make_unique<TwoPhaseStage>("a", 2.0f, c->trace);
  auto b = std::make_unique<TwoPhaseStage>("b", 3.0f, c->trace);
  c->a = a.get();
  c->b = b.get();
  std::vector<Graph::Made> stages;
  stages.push_back({"a", "input", std::move(a)});
  stages.push_back({"add", "a", std::make_unique<AddOne>(c->trace)});
  stages.push_back({"b", "add", std::move(b)});
  c->graph = std::make_unique<Graph>(std::move(stages), GraphBackend{});
  c->graph->prepare({1000.0, kChannels, 1, {""}, 0}, kFrames);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  c->x.resize(size_t(kChannels) * kFrames);
  for (float& v : c->x) v = u(rng);
  Block& in = c->graph->input_block();
  in.frames = kFrames;
  for (uint32_t ch = 0; ch < kChannels; ++ch)
    for (uint32_t i = 0; i < kFrames; ++i) in.data[ch * in.stride + i] = c->x[size_t(ch) * kFrames + i];
  // Poison what the stages write.
  for (size_t s = 1; s < c->graph->stream_count(); ++s) {
    const Block& o = c->graph->stream(s).block;  // (its samples are writable)
    for (uint32_t l = 0; l < kChannels; ++l) std::fill_n(o.data + l * o.stride, kFrames, std::nanf(""));
  }
  return c;
}

void expect_output(const Chain& c) {
  const Block& out = c.graph->stream(3).block;  // b's
  for (uint32_t ch = 0; ch < kChannels; ++ch)
    for (uint32_t i = 0; i < kFrames; ++i)
      ASSERT_EQ(out.data[ch * out.stride + i], (c.x[size_t(ch) * kFrames + i] * 2.0f + 1.0f) * 3.0f) << ch << "," << i;
}

TEST(GraphTwoPhase, EachQueuedStageGivesItsWaitBetweenItsTwoPhases) {
  auto c = chain();
  Exec exec;
  EXPECT_EQ(c->graph->run(exec, [&] { c->trace.push_back("wait"); }), StageStatus::kOk);
  EXPECT_EQ(c->trace, (Trace{"begin a", "wait", "finish a", "process add", "begin b", "wait", "finish b"}));
  expect_output(*c);
  for (size_t i = 0; i < c->graph->stage_count(); ++i) EXPECT_EQ(c->graph->stage_time(i).count(), 1u) << i;
}

TEST(GraphTwoPhase, ThePipelineThreadPollsTheWaitUntilTheWorkIsDone) {
  auto c = chain();
  c->a->polls = 3;
  Exec exec;
  ASSERT_EQ(c->graph->start(exec), Graph::Step::kGpuBusy);
  int offers = 0;
  while (c->graph->gpu_busy()) ++offers;
  EXPECT_EQ(offers, 3);
  ASSERT_EQ(c->graph->resume(exec), Graph::Step::kGpuBusy) << "b's wait next";
  EXPECT_FALSE(c->graph->gpu_busy());
  ASSERT_EQ(c->graph->resume(exec), Graph::Step::kDone);
  EXPECT_EQ(c->graph->result(), StageStatus::kOk);
  expect_output(*c);
}

TEST(GraphTwoPhase, AStageThatDoesItsChunkInBeginGivesNoWait) {
  auto c = chain();
  c->a->on_cpu = true;
  Exec exec;
  int waits = 0;
  EXPECT_EQ(c->graph->run(exec, [&] { ++waits; }), StageStatus::kOk);
  EXPECT_EQ(waits, 1) << "only b queued its work";
  EXPECT_EQ(c->trace, (Trace{"begin a", "process add", "begin b", "finish b"}));
  expect_output(*c);
}

TEST(GraphTwoPhase, AFailureInEitherPhaseFailsTheRunAndTheRestStillRuns) {
  for (const std::string phase : {"begin", "finish"}) {
    auto c = chain();
    c->a->fail_in = phase;
    Exec exec;
    EXPECT_EQ(c->graph->run(exec, [] {}), StageStatus::kFailed) << phase;
    EXPECT_EQ(c->trace.back(), "finish b") << phase << ": the stages after it still run";
    // Without a plain run() in between, the next run starts clean.
    c->a->fail_in.clear();
    EXPECT_EQ(c->graph->run(exec), StageStatus::kOk) << phase;
    expect_output(*c);
  }
}

}  // namespace
}  // namespace vigil
