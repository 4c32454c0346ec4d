#include "config/settings.hpp"
#include "stages/fir_bank_stage.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vigil {

std::vector<std::vector<float>> FirBankStage::design(const FirBankSettings& s, double rate_hz) {
  std::vector<std::vector<float>> taps;
  if (!s.crossover_hz.empty()) {
    for (const std::vector<double>& h : design_crossover(s.crossover_hz, s.taps, rate_hz, s.window))
      taps.emplace_back(h.begin(), h.end());
  } else {
    for (const BandSettings& b : s.bands) {
      const std::vector<double> h = design_fir(FirSpec{b.type, s.taps, b.f1_hz, b.f2_hz, rate_hz, s.window});
      taps.emplace_back(h.begin(), h.end());
    }
  }
  return taps;
}

StreamFormat FirBankStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  if (in.bands != 1)
    throw std::invalid_argument("fir_bank: input must have 1 band per channel, got " + std::to_string(in.bands));
  rate_hz_ = in.rate_hz;
  StreamFormat out = in;
  out.bands = uint32_t(settings_.bands.size());
  out.band_names.clear();
  for (const BandSettings& b : settings_.bands) out.band_names.push_back(b.name);
  const uint32_t max_latency = settings_.max_latency_frames ? settings_.max_latency_frames : max_frames;
  // A crossover's bands are complementary: the bank takes its last band from the others.
  bank_ = std::make_unique<StreamingFirBank>(design(settings_, in.rate_hz), in.channels, max_frames, max_latency,
                                             settings_.fft_planning, pool_, settings_.form,
                                             !settings_.crossover_hz.empty());
  out.delay_frames = in.delay_frames + bank_->latency_frames();
  form_ = bank_->describe();
  delay_frames_ = bank_->latency_frames();
  return out;
}

StageUpdatePlan FirBankStage::plan_fir_update(const FirBankSettings& current, const StageSettings& next, double rate_hz) {
  const auto& n = std::get<FirBankSettings>(next.params);
  StageUpdatePlan plan;
  if (n == current) return plan;
  std::vector<std::string> old_names, new_names;
  for (const BandSettings& b : current.bands) old_names.push_back(b.name);
  for (const BandSettings& b : n.bands) new_names.push_back(b.name);
  if (n.taps != current.taps || n.max_latency_frames != current.max_latency_frames || new_names != old_names ||
      n.crossover_hz.empty() != current.crossover_hz.empty() || n.fft_planning != current.fft_planning ||
      n.form != current.form) {
    plan.structural = true;
    plan.why = "the number of taps, the bands, the latency limit, the form or the FFT planning changed";
    return plan;
  }
  auto u = std::make_unique<FirBankUpdate>();
  u->settings = n;
  u->taps = design(n, rate_hz);
  plan.update = std::move(u);
  return plan;
}

StageUpdatePlan FirBankStage::plan_update(const StageSettings& next) const {
  return plan_fir_update(settings_, next, rate_hz_);
}

bool FirBankStage::apply_update(StageUpdate& update) noexcept {
  auto& u = static_cast<FirBankUpdate&>(update);
  try {
    // Crossfades from the old taps to the new over one block (direct form: 256 frames). The
    // new spectra are computed here, once per reload (an allocation on this thread, accepted for
    // an operator's reload; see docs/CONFIG.md).
    bank_->set_taps(u.taps);
  } catch (...) {  // the same tap count and bands as prepared: cannot fail but for memory, and
    return false;   // then every channel keeps the old taps until the service's rebuild
  }
  settings_ = std::move(u.settings);  // (a copy could throw: the update is spent anyway)
  return true;
}

StageStatus FirBankStage::process(const Block& in, Block& out, const Exec&) noexcept {
  bank_->process(in.data, in.stride, in.frames, out.data, out.stride);
  out.frames = in.frames;
  return StageStatus::kOk;
}

void FirBankStage::add_status(nlohmann::json& status) const {
  if (form_.empty()) return;  // not prepared
  status["form"] = form_;
  status["delay_frames"] = delay_frames_;
}

void FirBankStage::reset() noexcept {
  if (bank_) bank_->reset();
}

}  // namespace vigil
