// Window definitions; each formula is the textbook symmetric form scipy uses.
#include "dsp/window.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace vigil {

std::optional<WindowKind> parse_window_kind(std::string_view name) noexcept {
  if (name == "rectangular" || name == "boxcar") return WindowKind::kRectangular;
  if (name == "hamming") return WindowKind::kHamming;
  if (name == "hann") return WindowKind::kHann;
  if (name == "blackman") return WindowKind::kBlackman;
  if (name == "kaiser") return WindowKind::kKaiser;
  if (name == "flattop") return WindowKind::kFlattop;
  return std::nullopt;
}

std::string_view to_string(WindowKind kind) noexcept {
  switch (kind) {
    case WindowKind::kRectangular: return "rectangular";
    case WindowKind::kHamming: return "hamming";
    case WindowKind::kHann: return "hann";
    case WindowKind::kBlackman: return "blackman";
    case WindowKind::kKaiser: return "kaiser";
    case WindowKind::kFlattop: return "flattop";
  }
  return "?";
}

double kaiser_beta_for_attenuation(double a) noexcept {
  if (a > 50.0) return 0.1102 * (a - 8.7);
  if (a > 21.0) return 0.5842 * std::pow(a - 21.0, 0.4) + 0.07886 * (a - 21.0);
  return 0.0;
}

double bessel_i0(double x) noexcept {
  // sum_k ((x/2)^k / k!)^2 converges for all x; 1e-17 relative is below double rounding.
  const double half = x / 2.0;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 500; ++k) {
    term *= half / k;
    const double t2 = term * term;
    sum += t2;
    if (t2 < sum * 1e-17) break;
  }
  return sum;
}

std::vector<double> make_window(const WindowSpec& spec, size_t n) {
  if (n < 1 || n > 10'000'000)
    throw std::invalid_argument("make_window: n must be 1..10000000, got " + std::to_string(n));
  if (spec.kind == WindowKind::kKaiser && !(spec.kaiser_beta >= 0.0 && spec.kaiser_beta <= 50.0))
    throw std::invalid_argument("make_window: kaiser beta must be 0..50, got " +
                                std::to_string(spec.kaiser_beta));
  std::vector<double> w(n, 1.0);
  if (n == 1) return w;
  constexpr double kPi = std::numbers::pi;
  const double m = double(n - 1);
  for (size_t i = 0; i < n; ++i) {
    const double x = double(i);
    switch (spec.kind) {
      case WindowKind::kRectangular: break;
      case WindowKind::kHamming: w[i] = 0.54 - 0.46 * std::cos(2 * kPi * x / m); break;
      case WindowKind::kHann: w[i] = 0.5 - 0.5 * std::cos(2 * kPi * x / m); break;
      case WindowKind::kBlackman:
        w[i] = 0.42 - 0.5 * std::cos(2 * kPi * x / m) + 0.08 * std::cos(4 * kPi * x / m);
        break;
      case WindowKind::kFlattop: {
        constexpr double a[5] = {0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368};
        w[i] = 0;
        for (int k = 0; k < 5; ++k) w[i] += (k % 2 ? -a[k] : a[k]) * std::cos(2 * kPi * k * x / m);
        break;
      }
      case WindowKind::kKaiser: {
        const double r = 2.0 * x / m - 1.0;
        w[i] = bessel_i0(spec.kaiser_beta * std::sqrt(std::max(0.0, 1.0 - r * r))) /
               bessel_i0(spec.kaiser_beta);
        break;
      }
    }
  }
  return w;
}

}  // namespace vigil
