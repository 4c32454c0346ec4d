#include "dsp/welch_psd.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {

// Checked before the FFT member is planned, so a bad length gets Welch's message, not the FFT's.
size_t checked_nperseg(size_t nperseg) {
  if (nperseg < 4 || nperseg > (size_t(1) << 22) || nperseg % 2)
    throw std::invalid_argument("welch: nperseg must be even and 4..4194304, got " + std::to_string(nperseg));
  return nperseg;
}

}  // namespace

WelchPsd::WelchPsd(size_t nperseg, double rate_hz, WindowSpec window)
    : nperseg_(checked_nperseg(nperseg)), rate_hz_(rate_hz), fft_(nperseg_) {
  if (!(rate_hz > 0) || !std::isfinite(rate_hz))
    throw std::invalid_argument("welch: rate must be > 0, got " + std::to_string(rate_hz));
  // Periodic window: the symmetric window of nperseg + 1 points without its last point.
  const std::vector<double> w = make_window(window, nperseg + 1);
  double sum_sq = 0;
  for (size_t i = 0; i < nperseg; ++i) {
    window_.push_back(float(w[i]));
    sum_sq += w[i] * w[i];
  }
  scale_ = 1.0 / (rate_hz * sum_sq);
  segment_ = make_fftw_buffer(nperseg);
  spectrum_ = make_fftw_buffer(2 * bins());
}

size_t WelchPsd::compute(const float* x, size_t n, double* psd) noexcept {
  const size_t nb = bins(), step = nperseg_ / 2;
  for (size_t k = 0; k < nb; ++k) psd[k] = 0.0;
  if (n < nperseg_) return 0;
  const size_t segments = (n - nperseg_) / step + 1;
  for (size_t s = 0; s < segments; ++s) {
    const float* seg = x + s * step;
    double mean = 0;
    for (size_t i = 0; i < nperseg_; ++i) mean += seg[i];
    mean /= double(nperseg_);
    for (size_t i = 0; i < nperseg_; ++i) segment_[i] = float(double(seg[i]) - mean) * window_[i];
    fft_.forward(segment_.get(), spectrum_.get());
    for (size_t k = 0; k < nb; ++k) {
      const double re = spectrum_[2 * k], im = spectrum_[2 * k + 1];
      psd[k] += re * re + im * im;
    }
  }
  for (size_t k = 0; k < nb; ++k) {
    // One-sided: every bin but DC and Nyquist carries its negative-frequency twin too.
    const double twice = (k == 0 || k == nb - 1) ? 1.0 : 2.0;
    psd[k] *= scale_ * twice / double(segments);
  }
  return segments;
}

double WelchPsd::band_energy(const double* psd, double f_lo_hz, double f_hi_hz) const noexcept {
  return psd_band_energy(psd, bins(), rate_hz_ / double(nperseg_), f_lo_hz, f_hi_hz);
}

double psd_band_energy(const double* psd, size_t bins, double bin_hz, double f_lo_hz, double f_hi_hz) noexcept {
  double e = 0;
  for (size_t k = 0; k < bins; ++k) {
    const double f = double(k) * bin_hz;
    if (f >= f_lo_hz && f <= f_hi_hz) e += psd[k];
  }
  return e * bin_hz;
}

}  // namespace vigil
