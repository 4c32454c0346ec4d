// FirBankStage: adapts dsp/FirBank to the graph. Input: C channels (1 band). Output: N bands x C
// channels, same rate. Latency: none beyond the filters' own group delay ((taps-1)/2 samples).
#pragma once

#include <memory>

#include "config/settings.hpp"
#include "dsp/fir_bank.hpp"
#include "pipeline/stage.hpp"

namespace vigil {

class FirBankStage final : public Stage {
 public:
  explicit FirBankStage(FirBankSettings settings) : settings_(std::move(settings)) {}
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;

 private:
  FirBankSettings settings_;
  std::unique_ptr<FirBank> bank_;
};

}  // namespace vigil
