#include "stages/denoise_stage.hpp"

#include <stdexcept>
#include <string>

namespace vigil {

StreamFormat DenoiseStage::prepare(const StreamFormat& in, uint32_t /*max_frames*/) {
  const uint64_t lanes = uint64_t(in.bands) * in.channels;
  if (lanes < 1 || lanes > 4096)
    throw std::invalid_argument("wavelet_denoise: the input must have 1..4096 lanes (bands x channels), got " +
                                std::to_string(lanes));
  const uint32_t parts = WorkerPool::parts_for(pool_, uint32_t(lanes));
  parts_.clear();
  for (uint32_t i = 0; i < parts; ++i) {
    const WorkerPool::Range r = WorkerPool::range(uint32_t(lanes), parts, i);
    parts_.push_back({r.first, std::make_unique<StreamingDenoiser>(settings_.spec(), settings_.window, r.end - r.first)});
  }
  StreamFormat out = in;
  out.delay_frames = in.delay_frames + parts_[0].denoiser->latency_frames();
  return out;
}

StageStatus DenoiseStage::process(const Block& in, Block& out, const Exec&) noexcept {
  // Lanes are band-major at one stride in both blocks: each denoiser sees its range as channels.
  auto run_part = [&](uint32_t i) {
    const Part& p = parts_[i];
    p.denoiser->process(in.data + p.first_lane * in.stride, in.stride, in.frames, out.data + p.first_lane * out.stride,
                        out.stride);
  };
  if (parts_.size() > 1)
    pool_->run(uint32_t(parts_.size()), run_part);
  else
    run_part(0);
  out.frames = in.frames;
  return StageStatus::kOk;
}

void DenoiseStage::reset() noexcept {
  for (Part& p : parts_) p.denoiser->reset();
}

}  // namespace vigil
