// Stage: one step of the graph. prepare() off the real-time path; process() on it.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/sample_format.hpp"
#include "stages/block.hpp"

namespace vigil {

struct EventRecord;
class EventText;
class WaveformChannel;

enum class StageStatus { kOk, kFailed };

struct StageSettings;

// A change of coefficients or thresholds a stage has prepared off the real-time path (a reload).
struct StageUpdate {
  virtual ~StageUpdate() = default;
};

// What prepare_update() decided: nothing to do, an update to apply, or a structural change (why).
struct StageUpdatePlan {
  bool structural = false;
  std::string why;                      // structural: what differs
  std::unique_ptr<StageUpdate> update;  // null: nothing changes
};

// One step of the graph: what every stage does. Eight methods; what only some stages need is on
// the interfaces below, which the graph and the output thread look for once at setup.
class Stage {
 public:
  virtual ~Stage() = default;
  // Allocates, designs filters; returns the output format (bands 0: events only). May throw.
  virtual StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) = 0;
  // RT-safe: no allocation, locks, logging, exceptions or blocking.
  virtual StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept = 0;
  // Forget history.
  virtual void reset() noexcept = 0;
  // Main thread (a reload): prepares the change to `next` (same kind, name and input) when it
  // keeps this stage's structure (lanes, rates, delays, buffers); otherwise says why not.
  // The default: any difference is structural.
  virtual StageUpdatePlan plan_update(const StageSettings& next) const;
  // Pipeline thread, between chunks: applies what plan_update() prepared. No sample is lost or
  // repeated; filters crossfade. False: the stage could not (out of memory where it prepares new
  // filters in place), or only in part; the service then rebuilds (Service::update).
  virtual bool apply_update(StageUpdate& /*update*/) noexcept { return true; }
  // Releases latched alarms (SIGUSR1). Pipeline thread, between chunks.
  virtual void acknowledge() noexcept {}
  // Output thread: adds this stage's fields for one of its events to `body` (which already has
  // stage, band, channel, frame and sample_time). Reads only what prepare() set. May throw.
  virtual void describe_event(const EventRecord& /*ev*/, nlohmann::json& /*body*/) const {}
  // Any thread: adds this stage's counters to a status event (atomics only).
  virtual void add_status(nlohmann::json& /*status*/) const {}
};

// Stages whose events come by the thousand (AE hits, vibration windows): the same fields as
// describe_event, written as text. True where the stage did so; false, having written nothing,
// makes the output thread use describe_event. Output thread.
class EventTextWriter {
 public:
  virtual ~EventTextWriter() = default;
  virtual bool write_event(const EventRecord& ev, EventText& text) const = 0;
};

// Stages that capture hit waveforms for a VITA 49 output. (The channel is internally
// synchronised: a const stage still hands it out.)
class WaveformSource {
 public:
  virtual ~WaveformSource() = default;
  virtual WaveformChannel* waveforms() const noexcept = 0;
};

// What only the CUDA stages implement: page-locked staging the graph may share, the look-ahead's
// second input, raw input converted on the device, and device residency (stages/cuda_staging.hpp).
class GpuStage {
 public:
  virtual ~GpuStage() = default;
  // Page-locked memory, for the graph to spare host copies. bind_input(), before prepare(): the
  // input stream lives in page-locked memory another stage fills (its output_buffer()); read it in
  // place. After prepare(): output_buffer() is where process() writes its output anyway (lanes x
  // max_frames, stride max_frames), for the graph to use as the output stream's buffer;
  // input_buffer(), where the stage would copy its input, for the graph to convert the chunk into
  // when this stage reads the input stream. Null: the graph allocates and the stage copies.
  virtual void bind_input(const float* /*page_locked*/) noexcept {}
  virtual float* output_buffer() const noexcept { return nullptr; }
  virtual float* input_buffer() const noexcept { return nullptr; }
  // The look-ahead: a stage whose input_buffer() the graph converts the chunk into may offer a
  // second one, input_slot(1) (input_slot(0) is input_buffer()), for the graph to convert the next
  // chunk into while this one runs; upload_input(slot, frames) then starts that chunk's way to the
  // device (a copy on a stream of its own), and the next process() finds its block at that slot
  // and the copy under way. False: the upload could not be started (the chunk goes the usual way).
  virtual float* input_slot(unsigned slot) const noexcept { return slot == 0 ? input_buffer() : nullptr; }
  // raw: the chunk's interleaved samples when the input is taken raw (below), else null.
  // frames_up: its first frames already went up in parts (upload_input_part): only the rest is copied.
  virtual bool upload_input(unsigned /*slot*/, uint32_t /*frames*/, const void* /*raw*/, uint32_t /*frames_up*/ = 0) noexcept {
    return false;
  }
  // Raw input, while the chunk is still being captured: its frames [first, first + frames),
  // complete already, start their way to the slot (a copy on the look-ahead's stream); the chunk's
  // upload_input() then copies only what is left. False: not started (upload_input() copies all).
  virtual bool upload_input_part(unsigned /*slot*/, const void* /*raw*/, uint32_t /*first*/, uint32_t /*frames*/) noexcept {
    return false;
  }
  // Raw input: the stage reading the input (no other stage or output reading it on the host) may
  // take each chunk's interleaved samples as captured (Exec::raw_input) and convert them on the
  // device. Main thread, after prepare(); false: it does not (the input block is converted on
  // the host as usual). May throw (allocation). input_counts(): the last chunk's clipped and
  // non-finite samples from that conversion. frame_channels: the samples a captured frame holds
  // where the stage takes only a window of them (a part of a channel split: the raw pointers it is
  // given start at its first channel, a frame apart by frame_channels samples); 0: its own channels.
  virtual bool accept_raw_input(SampleFormat /*format*/, float /*scale*/, uint32_t /*frame_channels*/ = 0) {
    return false;
  }
  virtual void input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept { clipped = non_finite = 0; }
  // Device residency (copy-mode CUDA stages), to spare the copies between two CUDA stages. Before
  // prepare(): bind_producer(p): the input stream is p's output; while p->device_output() is
  // non-null, read the chunk there instead of copying it in. keep_output_on_device(true): no
  // output sends this stage's stream and every stage reading it has needs_host_input() false:
  // skip the copy back. Per chunk, after process(): device_output() is the output's device copy
  // (lanes x max_frames, stride max_frames), or null where there is none this chunk (the CPU twin
  // ran, a crossfade was made on the host); make_output_host_valid() copies it back when it was
  // kept on the device (a reader that falls back to its CPU twin needs it; the graph calls it for
  // readers that need the host input).
  virtual void bind_producer(GpuStage* /*producer*/) noexcept {}
  virtual void keep_output_on_device(bool /*keep*/) noexcept {}
  virtual const float* device_output() const noexcept { return nullptr; }
  virtual bool make_output_host_valid(uint32_t /*frames*/) noexcept { return true; }
  // Whether process() reads its input block on the host (false: a CUDA stage that takes its
  // producer's device_output() and keeps no host history of its input).
  virtual bool needs_host_input() const noexcept { return true; }
  // Before prepare(): this stage is one part of a stage split by channels (ChannelSplitStage)
  // whose channels number `channels` in all. A stage whose kernels are laid out by its lane count
  // (how the taps of a FIR are cut, which form it takes) lays them out as the whole stage would,
  // so that its samples are the whole stage's to the bit.
  virtual void set_layout_channels(uint32_t /*channels*/) noexcept {}

  // Two-phase work (enqueue, then complete), which the graph uses in place of process() where
  // two_phase(): begin() queues the chunk's GPU work and returns true; the pipeline thread then
  // has the wait (the look-ahead: no stage is on its stack), polling busy(), and finish() waits
  // for the work and completes the chunk. False: begin() did the whole chunk (on the CPU twin, or
  // a failure handed over) and `done` is its status. process() is the two in one
  // (finish_now()). RT-safe.
  virtual bool two_phase() const noexcept { return false; }
  virtual bool begin(const Block& /*in*/, Block& /*out*/, const Exec& /*exec*/, StageStatus& done) noexcept {
    done = StageStatus::kFailed;
    return false;
  }
  virtual bool busy() noexcept { return false; }
  virtual StageStatus finish(const Block& /*in*/, Block& /*out*/, const Exec& /*exec*/) noexcept {
    return StageStatus::kFailed;
  }
  // begin(), then finish() when the work was queued: a two-phase stage's process().
  StageStatus finish_now(const Block& in, Block& out, const Exec& exec) noexcept {
    StageStatus done = StageStatus::kOk;
    return begin(in, out, exec, done) ? finish(in, out, exec) : done;
  }
};

// The optional parts of a stage, found at setup (a dynamic_cast; never on the real-time path).
inline GpuStage* gpu_part(Stage& s) noexcept { return dynamic_cast<GpuStage*>(&s); }
inline const GpuStage* gpu_part(const Stage& s) noexcept { return dynamic_cast<const GpuStage*>(&s); }
inline const EventTextWriter* text_writer(const Stage& s) noexcept { return dynamic_cast<const EventTextWriter*>(&s); }
inline WaveformChannel* waveforms_of(const Stage& s) noexcept {
  const auto* w = dynamic_cast<const WaveformSource*>(&s);
  return w ? w->waveforms() : nullptr;
}

}  // namespace vigil
