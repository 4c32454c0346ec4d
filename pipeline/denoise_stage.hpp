// DenoiseStage (`kind: wavelet_denoise`): dsp/StreamingDenoiser on every lane of its input
// (bands x channels), VisuShrink on windows of `window` samples with hop window/2, overlap-added.
// Output: the same lanes and rate, delayed by `window` frames (added to the stream's
// delay_frames, so outputs and detectors keep their times right).
#pragma once

#include <memory>

#include "config/settings.hpp"
#include "dsp/wavelet_denoiser.hpp"
#include "pipeline/stage.hpp"

namespace vigil {

class DenoiseStage final : public Stage {
 public:
  explicit DenoiseStage(DenoiseStageSettings settings) : settings_(std::move(settings)) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;

 private:
  DenoiseStageSettings settings_;
  std::unique_ptr<StreamingDenoiser> denoiser_;
};

}  // namespace vigil
