// BandRmsStage: a detector. RMS of every (band, channel) lane over windows of window_s; raises an
// alarm when a window's RMS exceeds `threshold` and clears it when one falls below
// `clear_threshold` (hysteresis). Input: any sample stream. Output: events only.
#pragma once

#include <vector>

#include "config/settings.hpp"
#include "dsp/window_moments.hpp"
#include "dsp/windowed_rms.hpp"
#include "core/worker_pool.hpp"
#include "stages/stage.hpp"

namespace vigil {

class BandRmsStage final : public Stage {
 public:
  using Settings = BandRmsSettings;
  // (The pool is not used: one pass per lane is all a chunk costs. It is there for
  // pipeline/moments_cuda_stage, which makes its twin as it makes the vibration stage.)
  BandRmsStage(BandRmsSettings settings, uint16_t stage_index, WorkerPool* /*pool*/ = nullptr)
      : settings_(settings), stage_index_(stage_index) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;

  // Last completed window's RMS of a lane (for tests and status).
  double last_rms(uint32_t band, uint32_t channel) const noexcept { return lanes_[band * channels_ + channel].last; }

  // For the CUDA twin (pipeline/moments_cuda_stage), after prepare(); see VibrationStage. Every
  // setting sums on the GPU; cut() splits a chunk at window ends (the same for every lane), and
  // process_moments() takes each lane's moments of those runs (their sums of squares) instead of
  // the samples.
  static bool gpu_fits(const BandRmsSettings&) noexcept { return true; }
  bool sums_segments() const noexcept { return true; }
  uint32_t cut(uint32_t frames, uint32_t* starts, uint32_t max_runs) const noexcept;
  StageStatus process_moments(const Block& in, const Moments* moments, uint32_t runs, const Exec& exec) noexcept;

 private:
  struct Lane {
    WindowedRms rms;
    bool raised = false;
    double last = 0;
  };
  // A lane's window completed with this RMS at index i of the chunk: raise or clear the alarm.
  void window_done(Lane& lane, uint32_t b, uint32_t c, double rms, uint32_t i, const Exec& exec) noexcept;

  BandRmsSettings settings_;
  uint16_t stage_index_;
  uint32_t channels_ = 0;
  uint32_t delay_frames_ = 0;  // of the input stream
  double rate_hz_ = 0;
  std::vector<Lane> lanes_;
};

}  // namespace vigil
