// AeHitsStage: the acoustic-emission hit detector (dsp/AeHitDetector) on every lane of its input
// (raw or denoised samples). Emits one `ae_hit` event per hit and, every level interval, one
// `ae_level` event per lane. Output: events only.
#pragma once

#include <memory>

#include "dsp/ae_hit_detector.hpp"
#include "pipeline/stage.hpp"

namespace vigil {

class AeHitsStage final : public Stage {
 public:
  AeHitsStage(AeHitSettings settings, uint16_t stage_index) : settings_(settings), stage_index_(stage_index) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  const AeSampleParams& params() const noexcept { return params_; }

 private:
  AeHitSettings settings_;
  uint16_t stage_index_;
  AeSampleParams params_;
  uint32_t channels_ = 0;
  uint32_t delay_frames_ = 0;
  std::unique_ptr<AeHitDetector> detector_;  // one lane per (band, channel)
};

}  // namespace vigil
