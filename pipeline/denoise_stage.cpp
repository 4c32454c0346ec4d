#include "pipeline/denoise_stage.hpp"

#include <stdexcept>
#include <string>

namespace vigil {

StreamFormat DenoiseStage::prepare(const StreamFormat& in, uint32_t /*max_frames*/) {
  const uint64_t lanes = uint64_t(in.bands) * in.channels;
  if (lanes < 1 || lanes > 4096)
    throw std::invalid_argument("wavelet_denoise: the input must have 1..4096 lanes (bands x channels), got " +
                                std::to_string(lanes));
  denoiser_ = std::make_unique<StreamingDenoiser>(settings_.spec(), settings_.window, uint32_t(lanes));
  StreamFormat out = in;
  out.delay_frames = in.delay_frames + denoiser_->latency_frames();
  return out;
}

StageStatus DenoiseStage::process(const Block& in, Block& out, const Exec&) noexcept {
  // Lanes are band-major at one stride in both blocks: the denoiser sees them as its channels.
  denoiser_->process(in.data, in.stride, in.frames, out.data, out.stride);
  out.frames = in.frames;
  return StageStatus::kOk;
}

void DenoiseStage::reset() noexcept {
  if (denoiser_) denoiser_->reset();
}

}  // namespace vigil
