// The graph's side of device residency (pipeline.gpu_resident), on the CPU: which streams a stage
// keeps "on the device", who is bound to whom, and that a reader needing the host input gets the
// producer's output brought back first, every chunk it needs it. The stages here stand in for CUDA
// stages: a producer whose "device" copy is a second buffer, and readers that take it there or on
// the host. (The real CUDA stages run the same protocol in graph_cuda_test, on a GPU.)
#include "pipeline/graph.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stages/block.hpp"

namespace vigil {
namespace {

constexpr uint32_t kFrames = 64, kChannels = 2;

// Output = input + 1 on every lane, written to its "device" buffer, and to the host block unless
// kept on the device; make_output_host_valid() copies it over (counted).
class FakeProducer final : public Stage, public GpuStage {
 public:
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override {
    max_frames_ = max_frames;
    lanes_ = in.bands * in.channels;
    device_.assign(size_t(lanes_) * max_frames, 0.0f);
    host_.assign(size_t(lanes_) * max_frames, 0.0f);
    return in;
  }
  StageStatus process(const Block& in, Block& out, const Exec&) noexcept override {
    frames_ = in.frames;
    for (uint32_t l = 0; l < lanes_; ++l)
      for (uint32_t i = 0; i < in.frames; ++i) device_[size_t(l) * max_frames_ + i] = in.data[l * in.stride + i] + 1.0f;
    host_valid_ = !keep_;
    if (host_valid_) copy_back(out.data);
    return StageStatus::kOk;
  }
  void reset() noexcept override {}
  void keep_output_on_device(bool keep) noexcept override { keep_ = keep; }
  float* output_buffer() const noexcept override { return const_cast<float*>(host_.data()); }
  const float* device_output() const noexcept override { return device_.data(); }
  bool make_output_host_valid(uint32_t) noexcept override {
    if (host_valid_) return true;
    ++fetches;
    copy_back(host_.data());
    host_valid_ = true;
    return true;
  }
  bool keep() const { return keep_; }
  int fetches = 0;

 private:
  void copy_back(float* dst) noexcept {
    for (size_t i = 0; i < device_.size(); ++i) dst[i] = device_[i];
  }
  uint32_t max_frames_ = 0, lanes_ = 0, frames_ = 0;
  bool keep_ = false, host_valid_ = true;
  std::vector<float> device_, host_;
};

// A detector that sums its input each chunk, from the producer's "device" copy while it may
// (needs_host_input() false), else from the host block.
class FakeReader final : public Stage, public GpuStage {
 public:
  explicit FakeReader(bool on_device) : on_device_(on_device) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t) override {
    StreamFormat out = in;
    out.bands = 0;
    return out;
  }
  StageStatus process(const Block& in, Block&, const Exec&) noexcept override {
    const float* src = on_device_ && producer_ ? producer_->device_output() : in.data;
    double s = 0;
    for (uint32_t l = 0; l < in.bands * in.channels; ++l)
      for (uint32_t i = 0; i < in.frames; ++i) s += src[l * in.stride + i];
    sums.push_back(s);
    return StageStatus::kOk;
  }
  void reset() noexcept override {}
  void bind_producer(GpuStage* p) noexcept override { producer_ = p; }
  bool needs_host_input() const noexcept override { return !on_device_; }
  void fall_back() { on_device_ = false; }  // as a CUDA stage moving to its CPU twin
  GpuStage* producer() const { return producer_; }
  std::vector<double> sums;

 private:
  bool on_device_;
  GpuStage* producer_ = nullptr;
};

struct Built {
  std::unique_ptr<Graph> graph;
  FakeProducer* producer;
  FakeReader* device_reader;
  FakeReader* host_reader;  // null unless asked for
};

Built build(bool resident, bool with_host_reader, const std::vector<std::string>* host_streams) {
  Built b;
  auto p = std::make_unique<FakeProducer>();
  auto r = std::make_unique<FakeReader>(true);
  b.producer = p.get();
  b.device_reader = r.get();
  b.host_reader = nullptr;
  std::vector<Graph::Made> stages;
  stages.push_back({"p", "input", std::move(p)});
  stages.push_back({"r", "p", std::move(r)});
  if (with_host_reader) {
    auto h = std::make_unique<FakeReader>(false);
    b.host_reader = h.get();
    stages.push_back({"h", "p", std::move(h)});
  }
  GraphBackend backend;
  backend.cuda = true;
  backend.gpu_resident = resident;
  b.graph = std::make_unique<Graph>(std::move(stages), backend);
  b.graph->prepare({1000.0, kChannels, 1, {""}, 0}, kFrames, host_streams);
  return b;
}

// Runs `chunks` chunks of a ramp (chunk k: every sample k); the expected sum per chunk is
// lanes x frames x (k + 1).
void run(Graph& g, int chunks, int first = 0) {
  for (int k = first; k < first + chunks; ++k) {
    Block& in = g.input_block();
    in.frames = kFrames;
    for (uint32_t c = 0; c < kChannels; ++c)
      for (uint32_t i = 0; i < kFrames; ++i) in.data[c * in.stride + i] = float(k);
    Exec exec;
    ASSERT_EQ(g.run(exec), StageStatus::kOk);
  }
}

double expected(int k) { return double(kChannels) * kFrames * (k + 1); }

TEST(GraphResidency, AStreamOnlyDeviceReadersTakeStaysOnTheDevice) {
  const std::vector<std::string> nothing_sent;
  Built b = build(true, false, &nothing_sent);
  EXPECT_TRUE(b.producer->keep());
  EXPECT_TRUE(b.graph->stream(1).on_device_only);
  EXPECT_EQ(b.device_reader->producer(), b.producer);
  run(*b.graph, 3);
  ASSERT_EQ(b.device_reader->sums.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(b.device_reader->sums[k], expected(k));
  EXPECT_EQ(b.producer->fetches, 0) << "nothing needed the host copy";
  // The reader falls back to its CPU twin: from then on the graph brings the output back first.
  b.device_reader->fall_back();
  run(*b.graph, 2, 3);
  EXPECT_EQ(b.producer->fetches, 2);
  ASSERT_EQ(b.device_reader->sums.size(), 5u);
  for (int k = 3; k < 5; ++k) EXPECT_EQ(b.device_reader->sums[k], expected(k)) << "read a stale host copy";
}

TEST(GraphResidency, AStreamThatIsSentOrReadOnTheHostComesBack) {
  const std::vector<std::string> sent = {"p"}, nothing_sent;
  Built sent_b = build(true, false, &sent);
  EXPECT_FALSE(sent_b.producer->keep());
  EXPECT_FALSE(sent_b.graph->stream(1).on_device_only);
  Built host_b = build(true, true, &nothing_sent);  // a CPU reader beside the device one
  EXPECT_FALSE(host_b.producer->keep());
  run(*host_b.graph, 2);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(host_b.host_reader->sums.at(k), expected(k));
    EXPECT_EQ(host_b.device_reader->sums.at(k), expected(k));
  }
  Built unknown = build(true, false, nullptr);  // no list of sent streams: everything comes back
  EXPECT_FALSE(unknown.producer->keep());
}

TEST(GraphResidency, WithoutGpuResidentNothingIsBoundOrKept) {
  const std::vector<std::string> nothing_sent;
  Built b = build(false, false, &nothing_sent);
  EXPECT_FALSE(b.producer->keep());
  EXPECT_EQ(b.device_reader->producer(), nullptr);
  run(*b.graph, 2);
  for (int k = 0; k < 2; ++k) EXPECT_EQ(b.device_reader->sums.at(k), expected(k));  // from the host block
}

}  // namespace
}  // namespace vigil
