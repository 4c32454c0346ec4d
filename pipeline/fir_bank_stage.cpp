#include "pipeline/fir_bank_stage.hpp"

#include <stdexcept>

namespace vigil {

StreamFormat FirBankStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  if (in.bands != 1)
    throw std::invalid_argument("fir_bank: input must have 1 band per channel, got " + std::to_string(in.bands));
  std::vector<std::vector<float>> taps;
  StreamFormat out = in;
  out.bands = uint32_t(settings_.bands.size());
  out.band_names.clear();
  if (!settings_.crossover_hz.empty()) {
    for (const std::vector<double>& h : design_crossover(settings_.crossover_hz, settings_.taps, in.rate_hz,
                                                         settings_.window))
      taps.emplace_back(h.begin(), h.end());
    for (const BandSettings& b : settings_.bands) out.band_names.push_back(b.name);
  } else {
    for (const BandSettings& b : settings_.bands) {
      FirSpec spec{b.type, settings_.taps, b.f1_hz, b.f2_hz, in.rate_hz, settings_.window};
      const std::vector<double> h = design_fir(spec);
      taps.emplace_back(h.begin(), h.end());
      out.band_names.push_back(b.name);
    }
  }
  const uint32_t max_latency = settings_.max_latency_frames ? settings_.max_latency_frames : max_frames;
  bank_ = std::make_unique<StreamingFirBank>(taps, in.channels, max_frames, max_latency);
  out.delay_frames = in.delay_frames + bank_->latency_frames();
  return out;
}

StageStatus FirBankStage::process(const Block& in, Block& out, const Exec&) noexcept {
  bank_->process(in.data, in.stride, in.frames, out.data, out.stride);
  out.frames = in.frames;
  return StageStatus::kOk;
}

void FirBankStage::reset() noexcept {
  if (bank_) bank_->reset();
}

}  // namespace vigil
