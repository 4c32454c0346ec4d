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

// A crossover: edges e_0 < ... < e_{K-1} (Hz) split 0..rate/2 into K + 1 bands, each `taps` long
// (odd), built from lowpass designs at the edges: band 0 = LP(e_0), band k = LP(e_k) - LP(e_{k-1}),
// band K = delta - LP(e_{K-1}) with the delta at (taps - 1) / 2. The bands are complementary: they
// sum to the input delayed by (taps - 1) / 2 samples exactly (up to rounding).
// Throws std::invalid_argument (edges not ascending, outside (0, rate/2), even taps, ...).
std::vector<std::vector<double>> design_crossover(const std::vector<double>& edges_hz, size_t taps, double rate_hz,
                                                  WindowSpec window);

// Returns `taps` coefficients, scaled to unit gain at DC (lowpass, bandstop), Nyquist (highpass)
// or the pass band's centre (bandpass), as firwin does. Throws std::invalid_argument with the
// parameter, its valid range and the value given.
std::vector<double> design_fir(const FirSpec& spec);

}  // namespace vigil
