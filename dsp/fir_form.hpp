// FirForm: which form a streaming FIR bank takes (the fir_bank stage's `form` key). kAuto: the
// backend's measured choice (the CPU's direct form up to StreamingFirBank::kDirectMaxTaps taps,
// the GPU's up to its own crossover); kDirect: the direct form, no delay, work growing with the
// taps; kFft: the FFT forms, a block of delay, work growing with the log of the taps.
#pragma once

namespace vigil {

enum class FirForm { kAuto, kDirect, kFft };

inline const char* to_string(FirForm f) noexcept {
  return f == FirForm::kDirect ? "direct" : f == FirForm::kFft ? "fft" : "auto";
}

}  // namespace vigil
