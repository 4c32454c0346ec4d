// FirBankStage: adapts dsp/StreamingFirBank to the graph. Input: C channels (1 band). Output: N
// bands x C channels, same rate. Latency: 0 for the direct form (<= 48 taps), else one FFT block
// (<= max_latency_frames, default one chunk), added to the stream's delay_frames; the filters'
// own group delay ((taps-1)/2) is part of the signal, not of the delay.
#pragma once

#include <memory>

#include "config/settings.hpp"
#include "dsp/streaming_fir_bank.hpp"
#include "stages/stage.hpp"

namespace vigil {

// A planned change of a fir_bank's coefficients (same taps count and bands): the new settings
// and their designed taps. Made on the main thread, applied on the pipeline thread.
struct FirBankUpdate final : StageUpdate {
  FirBankSettings settings;
  std::vector<std::vector<float>> taps;
};

class FirBankStage final : public Stage {
 public:
  // pool: splits the channels over its threads (null: the pipeline thread alone); outlives the stage.
  explicit FirBankStage(FirBankSettings settings, WorkerPool* pool = nullptr)
      : settings_(std::move(settings)), pool_(pool) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;
  void add_status(nlohmann::json& status) const override;  // "form": the form prepare() chose
  const StreamingFirBank* bank() const noexcept { return bank_.get(); }
  // The taps `s` designs at `rate_hz` (one vector per band); the CUDA stage uses the same.
  static std::vector<std::vector<float>> design(const FirBankSettings& s, double rate_hz);
  // A reload from `current` to `next` at `rate_hz`, for this stage and its CUDA twin alike:
  // nothing, structural (taps, bands or latency limit changed), or a FirBankUpdate.
  static StageUpdatePlan plan_fir_update(const FirBankSettings& current, const StageSettings& next, double rate_hz);

 private:

  FirBankSettings settings_;
  double rate_hz_ = 0;
  std::unique_ptr<StreamingFirBank> bank_;
  std::string form_;  // bank_->describe(), fixed at prepare: status reads it from any thread
  uint32_t delay_frames_ = 0;  // the bank's latency, likewise
  WorkerPool* pool_ = nullptr;
};

}  // namespace vigil
