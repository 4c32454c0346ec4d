// Welch power spectral density, as scipy.signal.welch with its defaults: periodic window,
// segments of nperseg overlapping by nperseg/2, mean removed per segment ('constant' detrend),
// one-sided, 'density' scaling (V^2/Hz), mean over segments. Plus band energies from a PSD.
#pragma once

#include <cstddef>
#include <vector>

#include "dsp/real_fft.hpp"
#include "dsp/window.hpp"

namespace vigil {

class WelchPsd {
 public:
  // nperseg: even, 4..2^22; rate_hz > 0; window: any WindowKind (periodic form, as scipy's
  // get_window with fftbins=True). Throws std::invalid_argument.
  WelchPsd(size_t nperseg, double rate_hz, WindowSpec window = {WindowKind::kHann});

  size_t bins() const noexcept { return nperseg_ / 2 + 1; }
  double bin_hz(size_t k) const noexcept { return double(k) * rate_hz_ / double(nperseg_); }

  // psd: bins() values. x: n >= nperseg samples; segments start every nperseg/2 samples, the
  // tail that does not fill a segment is ignored (as scipy). Returns the segment count. RT-safe.
  size_t compute(const float* x, size_t n, double* psd) noexcept;

  // Energy (V^2) in [f_lo_hz, f_hi_hz] from a one-sided PSD: sum of bins whose centre lies inside,
  // times the bin width.
  double band_energy(const double* psd, double f_lo_hz, double f_hi_hz) const noexcept;

 private:
  size_t nperseg_;
  double rate_hz_;
  std::vector<float> window_;
  double scale_;  // 1 / (rate * sum w^2)
  RealFft fft_;
  FftwBuffer segment_, spectrum_;
};

// Energy (V^2) in [f_lo_hz, f_hi_hz] from a one-sided PSD of `bins` values spaced bin_hz apart:
// the sum of the bins whose centre lies inside, times the bin width. (WelchPsd::band_energy, and
// the same for a PSD computed on the GPU.)
double psd_band_energy(const double* psd, size_t bins, double bin_hz, double f_lo_hz, double f_hi_hz) noexcept;

}  // namespace vigil
