// A reload applied in place (Graph::apply_update): every stage with an update gets it, and the
// first stage that cannot apply its own (Stage::apply_update false: out of memory for new
// filters) is named, so that the service rebuilds instead of reporting an update that did not
// happen (Service::update).
#include "pipeline/graph.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "stages/block.hpp"

namespace vigil {
namespace {

struct GainUpdate final : StageUpdate {
  explicit GainUpdate(float g) : gain(g) {}
  float gain;
};

// Output = input * gain; an update sets the gain unless the stage is made to refuse it.
class GainStage final : public Stage {
 public:
  GainStage(float gain, bool refuses) : gain_(gain), refuses_(refuses) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t) override { return in; }
  StageStatus process(const Block& in, Block& out, const Exec&) noexcept override {
    for (uint32_t l = 0; l < in.bands * in.channels; ++l)
      for (uint32_t i = 0; i < in.frames; ++i) out.data[l * out.stride + i] = gain_ * in.data[l * in.stride + i];
    out.frames = in.frames;
    return StageStatus::kOk;
  }
  void reset() noexcept override {}
  bool apply_update(StageUpdate& update) noexcept override {
    ++attempts;
    if (refuses_) return false;
    gain_ = static_cast<GainUpdate&>(update).gain;
    return true;
  }
  float gain() const { return gain_; }
  int attempts = 0;

 private:
  float gain_;
  bool refuses_;
};

struct Chain {
  std::vector<GainStage*> stages;
  std::unique_ptr<Graph> graph;
};

// Stages a -> b -> c -> d, each reading the one before; `refusing` lists those that refuse.
Chain make_chain(const std::vector<bool>& refusing) {
  Chain c;
  std::vector<Graph::Made> made;
  const char* names[] = {"a", "b", "c", "d"};
  for (size_t i = 0; i < refusing.size(); ++i) {
    auto s = std::make_unique<GainStage>(float(i + 2), refusing[i]);
    c.stages.push_back(s.get());
    made.push_back({names[i], i == 0 ? "input" : names[i - 1], std::move(s)});
  }
  c.graph = std::make_unique<Graph>(std::move(made), GraphBackend{});
  c.graph->prepare({48000.0, 2, 1, {""}, 0}, 16);
  return c;
}

std::unique_ptr<Graph::Update> gains(const std::vector<float>& g) {
  auto u = std::make_unique<Graph::Update>();
  for (float x : g) u->stages.push_back(x > 0 ? std::make_unique<GainUpdate>(x) : nullptr);
  return u;
}

TEST(GraphUpdate, EveryStageTakesItsUpdateAndNoneFails) {
  Chain c = make_chain({false, false, false, false});
  auto u = gains({10, 0, 30, 40});  // b has no update
  EXPECT_EQ(c.graph->apply_update(*u), -1);
  EXPECT_EQ(c.stages[0]->gain(), 10.0f);
  EXPECT_EQ(c.stages[1]->gain(), 3.0f);
  EXPECT_EQ(c.stages[1]->attempts, 0);
  EXPECT_EQ(c.stages[2]->gain(), 30.0f);
  EXPECT_EQ(c.stages[3]->gain(), 40.0f);
}

TEST(GraphUpdate, TheFirstStageThatCannotApplyItsUpdateIsNamedAndTheOthersStillApplyTheirs) {
  Chain c = make_chain({false, true, false, true});
  auto u = gains({10, 20, 30, 40});
  EXPECT_EQ(c.graph->apply_update(*u), 1);
  EXPECT_EQ(c.graph->stage_name(1), "b");
  EXPECT_EQ(c.stages[0]->gain(), 10.0f);
  EXPECT_EQ(c.stages[1]->gain(), 3.0f);  // kept what it had
  EXPECT_EQ(c.stages[2]->gain(), 30.0f);
  EXPECT_EQ(c.stages[3]->gain(), 5.0f);
  for (GainStage* s : c.stages) EXPECT_EQ(s->attempts, 1);
}

TEST(GraphUpdate, AStageWithoutAnUpdateIsNotAskedEvenIfItWouldRefuse) {
  Chain c = make_chain({false, true});
  auto u = gains({7, 0});
  EXPECT_EQ(c.graph->apply_update(*u), -1);
  EXPECT_EQ(c.stages[0]->gain(), 7.0f);
  EXPECT_EQ(c.stages[1]->attempts, 0);
}

}  // namespace
}  // namespace vigil
