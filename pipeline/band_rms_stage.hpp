// BandRmsStage: a detector. RMS of every (band, channel) lane over windows of window_s; raises an
// alarm when a window's RMS exceeds `threshold` and clears it when one falls below
// `clear_threshold` (hysteresis). Input: any sample stream. Output: events only.
#pragma once

#include <vector>

#include "config/settings.hpp"
#include "dsp/windowed_rms.hpp"
#include "pipeline/stage.hpp"

namespace vigil {

class BandRmsStage final : public Stage {
 public:
  BandRmsStage(BandRmsSettings settings, uint16_t stage_index)
      : settings_(settings), stage_index_(stage_index) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  void apply_update(StageUpdate& update) noexcept override;

  // Last completed window's RMS of a lane (for tests and status).
  double last_rms(uint32_t band, uint32_t channel) const noexcept { return lanes_[band * channels_ + channel].last; }

 private:
  struct Lane {
    WindowedRms rms;
    bool raised = false;
    double last = 0;
  };
  BandRmsSettings settings_;
  uint16_t stage_index_;
  uint32_t channels_ = 0;
  uint32_t delay_frames_ = 0;  // of the input stream
  double rate_hz_ = 0;
  std::vector<Lane> lanes_;
};

}  // namespace vigil
