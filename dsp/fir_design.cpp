// firwin's construction: sum of ideal band responses (differences of sincs), windowed, then scaled.
#include "dsp/fir_design.hpp"

#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace vigil {

std::optional<FilterType> parse_filter_type(std::string_view name) noexcept {
  if (name == "lowpass") return FilterType::kLowpass;
  if (name == "highpass") return FilterType::kHighpass;
  if (name == "bandpass") return FilterType::kBandpass;
  if (name == "bandstop") return FilterType::kBandstop;
  return std::nullopt;
}

std::string_view to_string(FilterType type) noexcept {
  switch (type) {
    case FilterType::kLowpass: return "lowpass";
    case FilterType::kHighpass: return "highpass";
    case FilterType::kBandpass: return "bandpass";
    case FilterType::kBandstop: return "bandstop";
  }
  return "?";
}

namespace {

[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("design_fir: " + what); }

double sinc(double x) noexcept {
  if (x == 0.0) return 1.0;
  const double px = std::numbers::pi * x;
  return std::sin(px) / px;
}

}  // namespace

std::vector<double> design_fir(const FirSpec& s) {
  std::ostringstream msg;
  if (s.taps < 1 || s.taps > 65536) {
    msg << "taps must be 1..65536, got " << s.taps;
    reject(msg.str());
  }
  if (!(s.rate_hz > 0.0) || !std::isfinite(s.rate_hz)) {
    msg << "rate_hz must be > 0, got " << s.rate_hz;
    reject(msg.str());
  }
  const double nyq = s.rate_hz / 2.0;
  const bool two_edges = s.type == FilterType::kBandpass || s.type == FilterType::kBandstop;
  if (!(s.f1_hz > 0.0 && s.f1_hz < nyq)) {
    msg << "f1_hz must be in (0, " << nyq << ") for rate " << s.rate_hz << ", got " << s.f1_hz;
    reject(msg.str());
  }
  if (two_edges && !(s.f2_hz > s.f1_hz && s.f2_hz < nyq)) {
    msg << "f2_hz must be in (" << s.f1_hz << ", " << nyq << "), got " << s.f2_hz;
    reject(msg.str());
  }
  const bool passes_nyquist = s.type == FilterType::kHighpass || s.type == FilterType::kBandstop;
  if (passes_nyquist && s.taps % 2 == 0) {
    msg << "a " << to_string(s.type) << " filter needs an odd number of taps, got " << s.taps;
    reject(msg.str());
  }

  // Pass bands as [left, right] in units of Nyquist, exactly as firwin builds them.
  const double a = s.f1_hz / nyq, b = s.f2_hz / nyq;
  std::vector<std::pair<double, double>> bands;
  switch (s.type) {
    case FilterType::kLowpass: bands = {{0.0, a}}; break;
    case FilterType::kHighpass: bands = {{a, 1.0}}; break;
    case FilterType::kBandpass: bands = {{a, b}}; break;
    case FilterType::kBandstop: bands = {{0.0, a}, {b, 1.0}}; break;
  }

  const size_t n = s.taps;
  const double alpha = 0.5 * double(n - 1);
  std::vector<double> h(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double m = double(i) - alpha;
    for (const auto& [left, right] : bands) h[i] += right * sinc(right * m) - left * sinc(left * m);
  }
  const std::vector<double> w = make_window(s.window, n);
  for (size_t i = 0; i < n; ++i) h[i] *= w[i];

  const auto& [left, right] = bands.front();
  const double f_scale = left == 0.0 ? 0.0 : (right == 1.0 ? 1.0 : 0.5 * (left + right));
  double gain = 0.0;
  for (size_t i = 0; i < n; ++i)
    gain += h[i] * std::cos(std::numbers::pi * (double(i) - alpha) * f_scale);
  for (double& v : h) v /= gain;
  return h;
}

std::vector<std::vector<double>> design_crossover(const std::vector<double>& edges_hz, size_t taps, double rate_hz,
                                                  WindowSpec window) {
  if (edges_hz.empty() || edges_hz.size() > 255)
    reject("crossover needs 1..255 edges, got " + std::to_string(edges_hz.size()));
  if (taps % 2 == 0) reject("a crossover needs an odd number of taps (its top band passes Nyquist), got " + std::to_string(taps));
  for (size_t i = 1; i < edges_hz.size(); ++i)
    if (!(edges_hz[i] > edges_hz[i - 1]))
      reject("crossover edges must be strictly ascending, got " + std::to_string(edges_hz[i - 1]) + " then " +
             std::to_string(edges_hz[i]));
  std::vector<std::vector<double>> lows;
  for (double e : edges_hz) lows.push_back(design_fir({FilterType::kLowpass, taps, e, 0, rate_hz, window}));
  std::vector<std::vector<double>> bands;
  bands.push_back(lows.front());
  for (size_t k = 1; k < lows.size(); ++k) {
    std::vector<double> b(taps);
    for (size_t i = 0; i < taps; ++i) b[i] = lows[k][i] - lows[k - 1][i];
    bands.push_back(std::move(b));
  }
  std::vector<double> top(taps);
  for (size_t i = 0; i < taps; ++i) top[i] = -lows.back()[i];
  top[(taps - 1) / 2] += 1.0;
  bands.push_back(std::move(top));
  return bands;
}

}  // namespace vigil
