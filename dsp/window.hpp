// Symmetric analysis windows for FIR design (scipy.signal.get_window(..., fftbins=False)).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace vigil {

// kFlattop: scipy.signal.windows.flattop (5-term, after D'Antona and Ferrero); amplitude error
// under 0.02 dB anywhere between bins, for reading amplitudes off a spectrum.
enum class WindowKind { kRectangular, kHamming, kHann, kBlackman, kKaiser, kFlattop };

struct WindowSpec {
  WindowKind kind = WindowKind::kHamming;
  double kaiser_beta = 8.6;  // Kaiser only: shape, 0 <= beta <= 50
  bool operator==(const WindowSpec&) const = default;
};

std::optional<WindowKind> parse_window_kind(std::string_view name) noexcept;
std::string_view to_string(WindowKind kind) noexcept;

// Kaiser beta for a stop-band attenuation in dB (Kaiser's formula, as scipy.signal.kaiser_beta).
double kaiser_beta_for_attenuation(double atten_db) noexcept;

// Zeroth-order modified Bessel function of the first kind, by its power series.
double bessel_i0(double x) noexcept;

// n: 1..10^7 points. Throws std::invalid_argument naming the range otherwise.
std::vector<double> make_window(const WindowSpec& spec, size_t n);

}  // namespace vigil
