// ChannelSplitStage: one stage's channels split into contiguous ranges, each range run by a stage
// of its own (pipeline.gpus: the CUDA stage on each listed device), and gathered so that the
// output block and the events are those of one stage over all channels: the same values, the
// events in the same order (by lane, each part's own order within a lane).
// Each part's page-locked staging is allocated preferring its device's NUMA node (where the host
// has several and names the device's). Parts that queue their work (GpuStage::two_phase) are all begun before any is waited for, so
// that the devices run the chunk side by side. Each part keeps its own CPU twin: a failing device
// hands its channels to the CPU and the others go on (the part's status says so, per device).
// On the GPU a split stage keeps the data of each part on the part's device where it can:
// - Raw input (accept_raw_input): each part copies up its own channels of the chunk as captured
//   (a 2-D copy: its window of every frame) and converts them there; the look-ahead's uploads
//   (input_slot(1), upload_input, upload_input_part) go to every part the same way.
// - Chained (chain_after): a split reading another split's output over the same devices runs part
//   i on part i's output, read in place (its page-locked output, or with pipeline.gpu_resident its
//   device output), not from the gathered block; where every reader is chained so, the gathered
//   block is made only when asked (make_output_host_valid).
// Its parts' two phases are the stage's (GpuStage::two_phase): begun together, the graph's wait
// (and the look-ahead) while the devices run, finished together.
// Thread: as Stage (prepare, plan_update: main; process and the rest: the pipeline thread;
// describe_event, write_event: the output thread; add_status: any).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/spsc_queue.hpp"
#include "stages/event_record.hpp"
#include "stages/stage.hpp"

namespace vigil {

// A contiguous range of channels.
struct ChannelRange {
  uint32_t first = 0;
  uint32_t count = 0;
};

// `channels` split into at most `parts` contiguous ranges in order, as even as can be (the first
// ranges one channel longer where it does not divide); fewer ranges than parts where there are
// fewer channels, none empty.
std::vector<ChannelRange> split_channels(uint32_t channels, size_t parts);

// Makes the current CUDA device `device` for the calling thread while it lives, and puts the one
// before back. Without CUDA (or for device < 0) it does nothing.
class DeviceScope {
 public:
  explicit DeviceScope(int device) noexcept;
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

class ChannelSplitStage final : public Stage, public GpuStage, public EventTextWriter {
 public:
  using MakePart = std::function<std::unique_ptr<Stage>(int device)>;
  // devices: one entry per part (a device may be listed twice: two ranges on one device); make:
  // the stage for one part, called with that part's device current. -1 entries: no device (CPU).
  ChannelSplitStage(std::vector<int> devices, const MakePart& make);
  ~ChannelSplitStage() override;

  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;
  void acknowledge() noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  bool write_event(const EventRecord& ev, EventText& text) const override;
  // The parts' status folded into one (errors summed; chunk counts and times the largest
  // part's; text where the parts agree, else each) and, per part, `devices`: [{device (GPU parts),
  // numa_node (where known), first_channel, channels, device_memory_bytes (GPU parts: what the
  // device's free memory fell by while the part prepared; with the CUDA context where the part was
  // the device's first user) and device_memory_total_bytes, ...its own status}].
  void add_status(nlohmann::json& status) const override;

  // GpuStage, where every part is a CUDA stage with staging: the whole input's slots (plain
  // memory, untouched with raw input) the graph converts the chunk into, each part's lanes then
  // copied into its own staging; the look-ahead and raw input handed to every part; residency.
  float* input_buffer() const noexcept override { return input_slot(0); }
  float* input_slot(unsigned slot) const noexcept override {
    return slot < slots_ ? slot_[slot].get() : nullptr;
  }
  bool upload_input(unsigned slot, uint32_t frames, const void* raw, uint32_t frames_up = 0) noexcept override;
  bool upload_input_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames) noexcept override;
  bool accept_raw_input(SampleFormat format, float scale, uint32_t frame_channels = 0) override;
  void input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept override;
  void bind_producer(GpuStage* producer) noexcept override { resident_ = producer != nullptr; }
  void keep_output_on_device(bool keep) noexcept override;
  bool make_output_host_valid(uint32_t frames) noexcept override;
  bool needs_host_input() const noexcept override { return !producer_; }
  bool two_phase() const noexcept override { return two_phase_; }
  bool begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept override;
  bool busy() noexcept override;
  StageStatus finish(const Block& in, Block& out, const Exec& exec) noexcept override;
  // Main thread, before prepare(): this stage reads `producer`'s output; where both split over the
  // same devices (every part a GPU one), part i reads part i's output in place. Whether it does.
  bool chain_after(ChannelSplitStage& producer) noexcept;
  bool chained() const noexcept { return producer_ != nullptr; }

  // The devices of its GPU parts, each once, in list order (pipeline.gpu_keep_warm keeps each warm).
  std::vector<int> gpu_devices() const;
  size_t parts() const noexcept { return parts_.size(); }
  const Stage& part(size_t i) const noexcept { return *parts_[i].stage; }
  ChannelRange range(size_t i) const noexcept { return parts_[i].range; }

 private:
  struct Part {
    int device = -1;
    int numa_node = -1;  // the device's, where the host has several: its staging is placed there
    int64_t device_memory = -1, device_memory_total = -1;  // bytes (prepare()); -1: not known
    std::unique_ptr<Stage> stage;
    GpuStage* cuda = nullptr;  // the part's GpuStage (a CUDA stage), found when it is made
    GpuStage* gpu = nullptr;   // the same, where it queues its work (two-phase)
    ChannelRange range;
    // The range's lanes of the input (per input slot) and of the output (stride max_frames): a
    // CUDA part's own page-locked staging where it offers it (no copy between the two), else these
    // vectors; chained, the input is the producer's part's output.
    float* in[2] = {nullptr, nullptr};
    float* out = nullptr;
    std::vector<float> own_in, own_out;
    std::unique_ptr<SpscQueue<EventRecord>> events;
    std::vector<EventRecord> drained;  // this chunk's events, channels made global
    Block in_block, out_block;         // this chunk's, between begin() and finish()
    bool begun = false;
  };
  const Part& part_of(uint32_t channel) const noexcept;
  static EventRecord local_event(const EventRecord& ev, const Part& p) noexcept;
  Exec exec_of(const Part& p, const Exec& exec) const noexcept;
  // After every part's chunk: the outputs gathered into `out` (not those kept on their device
  // for chained readers), the events in order.
  void complete(Block& out, const Exec& exec) noexcept;
  void gather(const Part& p, Block& out) const noexcept;
  // The part's lanes of the whole block `whole` into its own block at `to` (the reverse of gather).
  void lanes_of(const Block& whole, const Part& p, float* to) const noexcept;
  void gather_events(const Exec& exec) noexcept;

  std::vector<Part> parts_;
  bool two_phase_ = false;  // some part queues its work (GpuStage::two_phase)
  // The whole input's slots (where every part has staging and this stage is no chained reader).
  std::unique_ptr<float[]> slot_[2];
  unsigned slots_ = 0;
  bool lanes_in_[2] = {false, false};  // upload_input copied the slot's lanes into the parts already
  bool raw_ = false;                   // raw input taken (accept_raw_input)
  size_t raw_sample_bytes_ = 0;
  ChannelSplitStage* producer_ = nullptr;  // chained: the split whose parts' outputs the parts read
  bool resident_ = false;  // pipeline.gpu_resident: chained parts read their producer's device output
  bool keep_ = false;      // no reader needs the gathered output on the host
  Block last_out_;         // the last chunk's gathered output (make_output_host_valid)
  std::vector<size_t> heads_;  // gather_events: each part's next event
  StreamFormat in_format_, out_format_;
  uint32_t max_frames_ = 0;
};

}  // namespace vigil
