// ChannelSplitStage: one stage's channels split into contiguous ranges, each range run by a stage
// of its own (pipeline.gpus: the CUDA stage on each listed device), and gathered so that the
// output block and the events are those of one stage over all channels: the same values, the
// events in the same order (by lane, each part's own order within a lane).
// Each part's page-locked staging is allocated preferring its device's NUMA node (where the host
// has several and names the device's). Parts that queue their work (GpuStage::two_phase) are all begun before any is waited for, so
// that the devices run the chunk side by side. Each part keeps its own CPU twin: a failing device
// hands its channels to the CPU and the others go on (the part's status says so, per device).
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

class ChannelSplitStage final : public Stage, public EventTextWriter {
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
  // numa_node (where known), first_channel, channels, ...its own status}].
  void add_status(nlohmann::json& status) const override;

  size_t parts() const noexcept { return parts_.size(); }
  const Stage& part(size_t i) const noexcept { return *parts_[i].stage; }
  ChannelRange range(size_t i) const noexcept { return parts_[i].range; }

 private:
  struct Part {
    int device = -1;
    int numa_node = -1;  // the device's, where the host has several: its staging is placed there
    std::unique_ptr<Stage> stage;
    GpuStage* gpu = nullptr;  // two-phase parts
    ChannelRange range;
    // The range's lanes of the input and of the output (stride max_frames): a CUDA part's own
    // page-locked staging where it offers it (no copy between the two), else these vectors.
    float* in = nullptr;
    float* out = nullptr;
    std::vector<float> own_in, own_out;
    std::unique_ptr<SpscQueue<EventRecord>> events;
    std::vector<EventRecord> drained;  // this chunk's events, channels made global
    bool begun = false;
  };
  const Part& part_of(uint32_t channel) const noexcept;
  static EventRecord local_event(const EventRecord& ev, const Part& p) noexcept;
  void gather_events(const Exec& exec) noexcept;

  std::vector<Part> parts_;
  std::vector<size_t> heads_;  // gather_events: each part's next event
  StreamFormat in_format_, out_format_;
  uint32_t max_frames_ = 0;
};

}  // namespace vigil
