// AeHitsStage: the acoustic-emission hit detector (dsp/AeHitDetector) on every lane of its input
// (raw or denoised samples). Emits one `ae_hit` event per hit and, every level interval, one
// `ae_level` event per lane. With transient capture on, each hit's waveform (pretrigger included)
// goes to the output thread through waveforms() and out as VITA 49 data on a per-channel hit
// stream. Output: events only. Without transient capture the lanes split over a worker pool: each
// part collects its lanes' events, emitted afterwards in lane order (the same order as one thread).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "dsp/ae_hit_detector.hpp"
#include "core/worker_pool.hpp"
#include "stages/event_record.hpp"
#include "stages/stage.hpp"
#include "core/waveform_channel.hpp"

namespace vigil {

class AeHitsStage final : public Stage, public EventTextWriter, public WaveformSource {
 public:
  // A part's events of the current chunk (lanes split over the pool), emitted after the run.
  struct PartEvents {
    std::vector<EventRecord> events;  // capacity fixed at prepare() or a reload: none per chunk
    size_t count = 0;
    uint64_t overflow = 0;            // beyond the capacity: counted as dropped events
  };

  // pool: splits the lanes over its threads when there is no transient capture (null: the
  // pipeline thread alone); outlives the stage.
  AeHitsStage(AeHitSettings settings, uint16_t stage_index, WorkerPool* pool = nullptr)
      : settings_(settings), stage_index_(stage_index), pool_(pool) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  bool write_event(const EventRecord& ev, EventText& text) const override;
  void add_status(nlohmann::json& status) const override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;
  const AeSampleParams& params() const noexcept { return params_; }
  // The thresholds and times in force (params() keeps the calibration of prepare()).
  const AeSampleParams& detector_params() const noexcept { return detector_->params(); }
  // For the CUDA twin (pipeline/ae_hits_cuda_stage), which runs this stage when it falls back:
  // fills the stage, band, channel, frame and time of an event of lane `lane` at stream frame
  // `stream_frame`; continues every lane from the GPU's state. RT-safe.
  void fill_event(EventRecord& ev, uint32_t lane, uint64_t stream_frame, const Exec& exec) const noexcept;
  void continue_from(const AeChannelState* lanes) noexcept;
  WaveformChannel* waveforms() const noexcept override { return waveforms_.get(); }
  // Captures lost: the lane was still capturing the previous hit, or no buffer was free.
  uint64_t waveforms_dropped() const noexcept { return waveforms_dropped_.load(std::memory_order_relaxed); }
  uint32_t parallel_parts() const noexcept { return parts_.empty() ? 1 : uint32_t(parts_.size()); }
  // The most events one lane can raise in a chunk of `frames`: hits are at least min(HDT, the
  // longest hit) + HLT + 1 samples apart, levels one interval (plus one of each carried over).
  static size_t events_per_lane(const AeSampleParams& p, uint32_t frames) noexcept;

 private:
  AeHitSettings settings_;
  uint16_t stage_index_;
  AeSampleParams params_;
  uint32_t channels_ = 0;
  uint32_t delay_frames_ = 0;
  std::unique_ptr<AeHitDetector> detector_;  // one lane per (band, channel)

  struct Capture {
    std::vector<float> history;  // the last `pretrigger` samples before the current chunk
    Waveform* active = nullptr;  // being filled
    Waveform* spare = nullptr;   // kept by reset() (only the output thread may release buffers)
    uint64_t start = 0;          // stream frame of active->data[0]
  };
  // One lane's chunk through the detector (and its capture); each event, filled in, to sink(ev).
  template <typename Sink>
  void push_lane(uint32_t lane, const Block& in, const Exec& exec, Sink&& sink) noexcept;
  // Buffers for the parts under params `p` (empty: one thread); allocates: prepare and plan_update.
  std::vector<PartEvents> make_parts(const AeSampleParams& p) const;
  WorkerPool* pool_ = nullptr;
  std::vector<PartEvents> parts_;  // empty: one thread
  uint32_t lanes_ = 0, max_frames_ = 0;

  void start_capture(Capture& cap, uint32_t lane, uint64_t arrival, const float* x, uint64_t first, const Exec& exec) noexcept;
  void continue_capture(Capture& cap, const float* x, uint32_t frames, uint64_t first) noexcept;
  uint32_t pretrigger_ = 0, waveform_len_ = 0;
  std::unique_ptr<WaveformChannel> waveforms_;
  std::vector<Capture> captures_;
  std::atomic<uint64_t> waveforms_dropped_{0}, waveforms_sent_{0};
};

}  // namespace vigil
