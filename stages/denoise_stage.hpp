// DenoiseStage (`kind: wavelet_denoise`): dsp/StreamingDenoiser on every lane of its input
// (bands x channels), VisuShrink on windows of `window` samples with hop window/2, overlap-added.
// Output: the same lanes and rate, delayed by `window` frames (added to the stream's
// delay_frames, so outputs and detectors keep their times right). With a worker pool the lanes
// are split into one denoiser per thread (each lane's result is the same either way).
#pragma once

#include <memory>
#include <vector>

#include "config/settings.hpp"
#include "dsp/wavelet_denoiser.hpp"
#include "core/worker_pool.hpp"
#include "stages/stage.hpp"

namespace vigil {

class DenoiseStage final : public Stage {
 public:
  // pool: splits the lanes over its threads (null: the pipeline thread alone); outlives the stage.
  explicit DenoiseStage(DenoiseStageSettings settings, WorkerPool* pool = nullptr)
      : settings_(std::move(settings)), pool_(pool) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;

 private:
  DenoiseStageSettings settings_;
  struct Part {
    uint32_t first_lane;
    std::unique_ptr<StreamingDenoiser> denoiser;
  };
  std::vector<Part> parts_;
  WorkerPool* pool_ = nullptr;
};

}  // namespace vigil
