// Windowed-sinc FIR design, the same construction as scipy.signal.firwin (scale=True).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "dsp/window.hpp"

namespace vigil {

enum class FilterType { kLowpass, kHighpass, kBandpass, kBandstop };

std::optional<FilterType> parse_filter_type(std::string_view name) noexcept;
std::string_view to_string(FilterType type) noexcept;

struct FirSpec {
  FilterType type = FilterType::kLowpass;
  size_t taps = 255;      // 1..65536; odd for highpass and bandstop (they pass Nyquist)
  double f1_hz = 1000.0;  // cutoff (lowpass, highpass) or lower edge (bandpass, bandstop); 0 < f1 < rate/2
  double f2_hz = 0.0;     // upper edge (bandpass, bandstop only); f1 < f2 < rate/2
  double rate_hz = 48000.0;
  WindowSpec window;
};

// Returns `taps` coefficients, scaled to unit gain at DC (lowpass, bandstop), Nyquist (highpass)
// or the pass band's centre (bandpass), as firwin does. Throws std::invalid_argument with the
// parameter, its valid range and the value given.
std::vector<double> design_fir(const FirSpec& spec);

}  // namespace vigil
