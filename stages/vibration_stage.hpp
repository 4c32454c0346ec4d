// VibrationStage: condition monitoring of every lane of its input (raw channels or fir_bank
// bands). Every hop, each lane's last window is analysed (dsp/VibrationAnalyzer): one `vibration`
// event with the metrics and ISO zone, then each alarm rule is evaluated (alarm events on every
// level change). The FFT work of a hop is spread over the following process() calls (a bounded
// number of lanes per call) so no chunk carries all lanes' analyses at once; events keep the
// frame and time of the window's last sample. Output: events only.
// The time statistics come from segment moments where window and hop share a segment length of
// at least 64 samples (e.g. 1 s windows every 0.5 s: two segments per window): each sample is
// summed once, as it arrives, instead of twice per window it lies in.
#pragma once

#include <memory>
#include <vector>

#include "config/settings.hpp"
#include "dsp/window_moments.hpp"
#include "core/worker_pool.hpp"
#include "stages/stage.hpp"

namespace vigil {

class VibrationStage final : public Stage, public EventTextWriter {
 public:
  using Settings = VibrationStageSettings;
  // pool: splits the lanes' summing over its threads (null: the pipeline thread alone).
  VibrationStage(VibrationStageSettings settings, uint16_t stage_index, WorkerPool* pool = nullptr)
      : settings_(std::move(settings)), stage_index_(stage_index), pool_(pool) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  void acknowledge() noexcept override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  bool write_event(const EventRecord& ev, EventText& text) const override;

  // Windows whose analysis was overtaken by the next one before it ran (never, at sane hops).
  uint64_t windows_skipped() const noexcept { return windows_skipped_; }

  // For the CUDA twin (pipeline/moments_cuda_stage), after prepare(). sums_segments(): every
  // statistic comes from segment moments (no metric needs the samples themselves), so the
  // moments of each lane's runs are all process() takes from a chunk. cut(): where the next
  // chunk of `frames` splits into those runs, the same for every lane (at segment ends):
  // starts[0..runs], returns runs, or 0 where they would be more than max_runs. RT-safe.
  bool sums_segments() const noexcept { return segment_ != 0 && !keep_samples_; }
  // Whether these settings can sum on the GPU at all: no metric that needs the window's samples
  // in order (velocity, envelope).
  static bool gpu_fits(const VibrationStageSettings& s) noexcept { return !s.analysis.velocity && !s.analysis.envelope; }
  uint32_t cut(uint32_t frames, uint32_t* starts, uint32_t max_runs) const noexcept;
  // process() with lane l's moments of run r (cut()'s) given at moments[l * runs + r]; the
  // block's samples are not read. RT-safe.
  StageStatus process_moments(const Block& in, const Moments* moments, uint32_t runs, const Exec& exec) noexcept;

 private:
  struct Lane {
    // The last window + hop samples, circular, kept only when a metric needs them in order or
    // the window has no segment length (see prepare): a completed window stays intact here
    // until the next one completes (a hop later), so it waits for analysis without being copied.
    std::vector<float> ring;
    uint32_t pos = 0;
    uint64_t seen = 0;  // samples pushed (stream frames since the start)
    // Segment moments: the current segment's so far and the last window's segments (a ring).
    Moments segment;
    std::vector<Moments> segments;
    uint32_t segment_pos = 0;    // the oldest segment
    uint32_t pending_start = 0;  // ring index of the oldest sample of the completed window
    bool is_pending = false;
    uint64_t pending_end_frame = 0;
    VibrationStats pending_stats;  // with segments: the completed window's, merged at completion
    uint32_t completed = 0;        // windows completed in this process() call
    bool was_pending = false;      // ... and whether one was still waiting before it
    std::vector<AlarmRuleState> rules;
  };
  // given: the lane's moments of each run of the chunk (process_moments), else null: x is summed.
  void push(Lane& lane, const float* x, const Moments* given, uint32_t frames, const Exec& exec) noexcept;
  StageStatus run(const Block& in, const Moments* given, uint32_t runs, const Exec& exec) noexcept;
  void complete_window(Lane& lane, uint64_t end_frame) noexcept;
  void analyze(uint32_t lane, const Exec& exec) noexcept;
  std::vector<float> window_;  // the lane being analysed, unrolled into time order
  void push_event(EventRecord& ev, const Exec& exec) noexcept;

  VibrationStageSettings settings_;
  uint16_t stage_index_;
  WorkerPool* pool_ = nullptr;
  std::unique_ptr<VibrationAnalyzer> analyzer_;
  uint32_t channels_ = 0;
  uint32_t delay_frames_ = 0;
  double rate_hz_ = 0;
  uint32_t per_call_ = 1;  // analyses per process() call
  uint32_t segment_ = 0;   // samples per segment (divides window and hop), 0: statistics from the ring
  bool keep_samples_ = true;
  std::vector<Lane> lanes_;
  std::vector<uint32_t> queue_;  // lanes waiting, FIFO ring
  size_t queue_head_ = 0, queue_size_ = 0;
  uint64_t windows_skipped_ = 0;
};

}  // namespace vigil
