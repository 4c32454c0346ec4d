// What a channel split does with parts that are GPU stages, checked without a GPU: parts that
// implement GpuStage as a CUDA stage does (two input slots, two-phase work, raw input, an output
// that stays "on the device" until asked for) but compute on the host, so that CI runs the split's
// own logic: each part given its window of the raw chunk (first channel, frames a frame apart by
// all the channels), the look-ahead's uploads and parts handed on with those windows, a chained
// split's parts reading the producer's parts in place or on the device, and a gathered output
// kept back until make_output_host_valid(). The same logic with the real CUDA stages runs on the
// GPU machine (tests/pipeline/graph_cuda_test.cpp *Split*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "stages/channel_split_stage.hpp"

namespace vigil {
namespace {

constexpr uint32_t kChannels = 5, kMaxFrames = 64;  // parts of 3 and 2 channels
constexpr float kScale = 1.0f / 32768;

// y = 2x + 1 on every lane; x from (in order) the producer's device output, the raw chunk's window
// (int16, frame_channels apart), or the input block. Its output goes to the "device" copy, and to
// the host output at finish() unless kept (keep_output_on_device).
class DoublingPart final : public Stage, public GpuStage {
 public:
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override {
    lanes_ = in.bands * in.channels;
    max_frames_ = max_frames;
    for (auto& s : slots_) s.assign(size_t(lanes_) * max_frames, 0.0f);
    out_.assign(size_t(lanes_) * max_frames, 0.0f);
    device_.assign(size_t(lanes_) * max_frames, 0.0f);
    return in;
  }
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override { return finish_now(in, out, exec); }
  void reset() noexcept override {}

  float* input_buffer() const noexcept override { return input_slot(0); }
  float* input_slot(unsigned slot) const noexcept override {
    return slot < 2 ? const_cast<float*>(slots_[slot].data()) : nullptr;
  }
  float* output_buffer() const noexcept override { return const_cast<float*>(out_.data()); }
  void bind_input(const float* p) noexcept override { bound_ = p; }
  void bind_producer(GpuStage* p) noexcept override { producer_ = p; }
  void keep_output_on_device(bool keep) noexcept override { keep_ = keep; }
  const float* device_output() const noexcept override { return device_valid_ ? device_.data() : nullptr; }
  bool make_output_host_valid(uint32_t frames) noexcept override {
    if (!host_valid_)
      for (uint32_t l = 0; l < lanes_; ++l)
        std::copy_n(device_.data() + size_t(l) * max_frames_, frames, out_.data() + size_t(l) * max_frames_);
    host_valid_ = true;
    return true;
  }
  bool needs_host_input() const noexcept override { return producer_ == nullptr; }
  bool accept_raw_input(SampleFormat format, float scale, uint32_t frame_channels) override {
    if (format != SampleFormat::kInt16) return false;
    scale_ = scale;
    frame_channels_ = frame_channels;
    return true;
  }
  bool upload_input(unsigned slot, uint32_t frames, const void* raw, uint32_t frames_up) noexcept override {
    uploads.push_back({slot, raw, 0, frames, frames_up});
    return true;
  }
  bool upload_input_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames) noexcept override {
    uploads.push_back({slot, raw, first, frames, 0});
    return true;
  }
  bool two_phase() const noexcept override { return true; }
  bool begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept override {
    done = StageStatus::kOk;
    out.frames = in.frames;
    device_valid_ = false;
    host_valid_ = true;
    const float* from_device = producer_ ? producer_->device_output() : nullptr;
    const auto* raw = static_cast<const int16_t*>(exec.raw_input);
    read_in_place = in.data == bound_;
    read_raw = raw != nullptr;
    read_device = from_device != nullptr;
    for (uint32_t l = 0; l < lanes_; ++l)
      for (uint32_t f = 0; f < in.frames; ++f) {
        const float x = from_device ? from_device[size_t(l) * max_frames_ + f]
                        : raw       ? float(raw[size_t(f) * frame_channels_ + l]) * scale_
                                    : in.data[size_t(l) * in.stride + f];
        device_[size_t(l) * max_frames_ + f] = 2 * x + 1;
      }
    return true;
  }
  StageStatus finish(const Block& in, Block& /*out*/, const Exec& /*exec*/) noexcept override {
    device_valid_ = true;
    host_valid_ = false;
    if (!keep_) make_output_host_valid(in.frames);
    return StageStatus::kOk;
  }

  struct Upload {
    unsigned slot;
    const void* raw;
    uint32_t first, frames, frames_up;
  };
  std::vector<Upload> uploads;
  uint32_t frame_channels_ = 0;
  bool read_in_place = false, read_raw = false, read_device = false;

 private:
  uint32_t lanes_ = 0, max_frames_ = 0;
  std::vector<float> slots_[2], out_, device_;
  const float* bound_ = nullptr;
  GpuStage* producer_ = nullptr;
  bool keep_ = false, device_valid_ = false, host_valid_ = true;
  float scale_ = 1.0f;
};

// A split over devices [0, 0] of DoublingParts (no GPU needed: the device scope does nothing where
// CUDA answers nothing), and its parts.
struct Split {
  std::vector<DoublingPart*> parts;
  std::unique_ptr<ChannelSplitStage> stage;
  Split() {
    stage = std::make_unique<ChannelSplitStage>(std::vector<int>{0, 0}, [this](int) {
      auto p = std::make_unique<DoublingPart>();
      parts.push_back(p.get());
      return p;
    });
  }
};

std::vector<int16_t> raw_chunk(uint32_t frames, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-32768, 32767);
  std::vector<int16_t> x(size_t(frames) * kChannels);
  for (int16_t& v : x) v = int16_t(d(rng));
  return x;
}

void run(ChannelSplitStage& s, const Block& in, Block& out, const Exec& exec) {
  StageStatus done = StageStatus::kFailed;
  ASSERT_TRUE(s.two_phase());
  ASSERT_TRUE(s.begin(in, out, exec, done)) << "GPU parts queue their work: the split is two-phase";
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(s.finish(in, out, exec), StageStatus::kOk);
}

// Raw input: every part is told how many samples a captured frame holds and is handed its window
// (the chunk from its first channel on), at run time and in the look-ahead's uploads; the gathered
// bands are those of the whole chunk converted.
TEST(ChannelSplitDevicePaths, EachPartTakesItsWindowOfTheRawChunk) {
  Split a;
  a.stage->prepare({1e6, kChannels, 1, {""}, 0}, kMaxFrames);
  ASSERT_NE(a.stage->input_buffer(), nullptr) << "GPU parts with staging: the split offers the whole input's slots";
  ASSERT_NE(a.stage->input_slot(1), nullptr) << "the look-ahead's second slot";
  ASSERT_TRUE(a.stage->accept_raw_input(SampleFormat::kInt16, kScale));
  for (const DoublingPart* p : a.parts) EXPECT_EQ(p->frame_channels_, kChannels);
  EXPECT_FALSE(a.stage->accept_raw_input(SampleFormat::kInt16, kScale, 7)) << "a split is no part of another";

  const std::vector<int16_t> x = raw_chunk(kMaxFrames, std::random_device{}());
  std::vector<float> out(size_t(kChannels) * kMaxFrames, std::numeric_limits<float>::quiet_NaN());
  Block in{a.stage->input_buffer(), kMaxFrames, kMaxFrames, kChannels, 1};
  Block ob{out.data(), kMaxFrames, kMaxFrames, kChannels, 1};
  Exec exec;
  exec.raw_input = x.data();
  run(*a.stage, in, ob, exec);
  for (const DoublingPart* p : a.parts) EXPECT_TRUE(p->read_raw);
  for (uint32_t c = 0; c < kChannels; ++c)
    for (uint32_t f = 0; f < kMaxFrames; ++f)
      ASSERT_EQ(out[size_t(c) * kMaxFrames + f], 2 * (float(x[size_t(f) * kChannels + c]) * kScale) + 1) << c << " " << f;

  // The look-ahead: the next chunk's parts and its rest go to slot 1 of every part, each its window.
  const std::vector<int16_t> next = raw_chunk(kMaxFrames, 5);
  EXPECT_TRUE(a.stage->upload_input_part(1, next.data(), 0, 20));
  EXPECT_TRUE(a.stage->upload_input(1, kMaxFrames, next.data(), 20));
  const uint32_t first[2] = {0, 3};
  for (int i = 0; i < 2; ++i) {
    const auto& u = a.parts[size_t(i)]->uploads;
    ASSERT_EQ(u.size(), 2u);
    const void* window = next.data() + first[i];
    EXPECT_EQ(u[0].slot, 1u);
    EXPECT_EQ(u[0].raw, window);
    EXPECT_EQ(u[0].first, 0u);
    EXPECT_EQ(u[0].frames, 20u);
    EXPECT_EQ(u[1].raw, window);
    EXPECT_EQ(u[1].frames, kMaxFrames);
    EXPECT_EQ(u[1].frames_up, 20u);
  }
  EXPECT_FALSE(a.stage->upload_input(2, kMaxFrames, next.data())) << "there is no third slot";
}

// Without raw input the look-ahead's upload copies the slot's lanes into each part's own slot at
// once; the chunk then runs from there (no second copy, the same bands).
TEST(ChannelSplitDevicePaths, TheLookAheadCopiesEachPartsLanesWhenItUploads) {
  Split a;
  a.stage->prepare({1e6, kChannels, 1, {""}, 0}, kMaxFrames);
  float* slot1 = a.stage->input_slot(1);
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> n;
  for (size_t i = 0; i < size_t(kChannels) * kMaxFrames; ++i) slot1[i] = n(rng);
  const std::vector<float> x(slot1, slot1 + size_t(kChannels) * kMaxFrames);
  EXPECT_TRUE(a.stage->upload_input(1, kMaxFrames, nullptr));
  std::fill_n(slot1, size_t(kChannels) * kMaxFrames, std::numeric_limits<float>::quiet_NaN());  // copied already
  std::vector<float> out(x.size());
  Block in{slot1, kMaxFrames, kMaxFrames, kChannels, 1};
  Block ob{out.data(), kMaxFrames, kMaxFrames, kChannels, 1};
  run(*a.stage, in, ob, Exec{});
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], 2 * x[i] + 1) << i;
}

// A split reading another split's output over the same devices runs part i on part i's output:
// in place (bind_input) or, resident, on the device (bind_producer). With the producer's output
// kept on its devices the gathered block is not written until asked for.
TEST(ChannelSplitDevicePaths, AChainedSplitReadsItsProducersPartsAndTheGatherWaitsUntilAsked) {
  for (const bool resident : {false, true}) {
    SCOPED_TRACE(resident ? "resident" : "in place");
    Split a, b;
    ASSERT_TRUE(b.stage->chain_after(*a.stage));
    EXPECT_FALSE(b.stage->needs_host_input()) << "its parts read the producer's parts, not the gathered block";
    if (resident) b.stage->bind_producer(a.stage.get());
    a.stage->keep_output_on_device(resident);  // what the graph decides for a stream only chained splits read
    const StreamFormat f{1e6, kChannels, 1, {""}, 0};
    a.stage->prepare(f, kMaxFrames);
    b.stage->prepare(f, kMaxFrames);
    EXPECT_EQ(b.stage->input_buffer(), nullptr) << "a chained split takes no chunk of its own";

    std::vector<float> x(size_t(kChannels) * kMaxFrames);
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> n;
    for (float& v : x) v = n(rng);
    std::copy(x.begin(), x.end(), a.stage->input_buffer());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> mid(x.size(), nan), out(x.size(), nan);
    Block in{a.stage->input_buffer(), kMaxFrames, kMaxFrames, kChannels, 1};
    Block mb{mid.data(), kMaxFrames, kMaxFrames, kChannels, 1};
    Block ob{out.data(), kMaxFrames, kMaxFrames, kChannels, 1};
    run(*a.stage, in, mb, Exec{});
    run(*b.stage, mb, ob, Exec{});
    for (const DoublingPart* p : b.parts) {
      EXPECT_TRUE(p->read_in_place) << "its block is the producer's part's output";
      EXPECT_EQ(p->read_device, resident);
    }
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], 2 * (2 * x[i] + 1) + 1) << i;
    if (resident) {
      for (float v : mid) ASSERT_TRUE(std::isnan(v)) << "kept on the devices: not gathered";
      EXPECT_TRUE(a.stage->make_output_host_valid(kMaxFrames));
    }
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(mid[i], 2 * x[i] + 1) << i;
  }
}

// Parts on the CPU (no device), or splits over other devices, are not chained.
TEST(ChannelSplitDevicePaths, OnlySplitsOverTheSameDevicesWithGpuPartsAreChained) {
  Split a;
  ChannelSplitStage other({0, 1}, [](int) { return std::make_unique<DoublingPart>(); });
  EXPECT_FALSE(other.chain_after(*a.stage));
  ChannelSplitStage three({0, 0, 0}, [](int) { return std::make_unique<DoublingPart>(); });
  EXPECT_FALSE(three.chain_after(*a.stage));
  ChannelSplitStage cpu({-1, -1}, [](int) { return std::make_unique<DoublingPart>(); });
  EXPECT_FALSE(cpu.chain_after(*a.stage));
  EXPECT_TRUE(cpu.needs_host_input());
}

}  // namespace
}  // namespace vigil
