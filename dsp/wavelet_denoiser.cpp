#include "dsp/wavelet_denoiser.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace vigil {

Wavelet denoise_wavelet(const DenoiseSpec& spec) {
  const std::string& name = spec.wavelet;
  std::optional<Wavelet> w = find_wavelet(name);
  if (!w) {
    std::string list;
    for (const auto& n : wavelet_names()) list += (list.empty() ? "" : ", ") + n;
    throw std::invalid_argument("denoise: unknown wavelet '" + name + "' (known: " + list + ")");
  }
  return *w;
}

unsigned denoise_levels(const DenoiseSpec& spec, size_t n) {
  if (spec.levels) return spec.levels;
  const unsigned j = Dwt::max_level(n, denoise_wavelet(spec).length());
  return j ? j : 1;
}

std::optional<ThresholdMode> parse_threshold_mode(std::string_view s) noexcept {
  if (s == "soft") return ThresholdMode::kSoft;
  if (s == "hard") return ThresholdMode::kHard;
  return std::nullopt;
}

std::optional<NoiseEstimate> parse_noise_estimate(std::string_view s) noexcept {
  if (s == "finest") return NoiseEstimate::kFinest;
  if (s == "per-level") return NoiseEstimate::kPerLevel;
  return std::nullopt;
}

WaveletDenoiser::WaveletDenoiser(const DenoiseSpec& spec, size_t n)
    : spec_(spec), dwt_(denoise_wavelet(spec), n, denoise_levels(spec, n)), median_abs_(n / 2 + 1) {
  if (!(spec.threshold_scale >= 0.0 && spec.threshold_scale <= 1e6))
    throw std::invalid_argument("denoise: threshold_scale must be 0..1e6, got " + std::to_string(spec.threshold_scale));
  coeffs_.resize(n);
  thresholds_.resize(dwt_.levels());
}

void WaveletDenoiser::process(const float* x, float* y) noexcept {
  const size_t n = dwt_.size();
  dwt_.forward(x, coeffs_.data());
  const double universal = std::sqrt(2.0 * std::log(double(n))) * spec_.threshold_scale;
  const float sigma_finest = median_abs_(coeffs_.data() + dwt_.detail_offset(1), dwt_.detail_length(1)) / 0.6745f;
  for (unsigned j = 1; j <= dwt_.levels(); ++j) {
    float* d = coeffs_.data() + dwt_.detail_offset(j);
    const size_t len = dwt_.detail_length(j);
    const float sigma = spec_.noise == NoiseEstimate::kFinest ? sigma_finest : median_abs_(d, len) / 0.6745f;
    const float thr = float(double(sigma) * universal);
    thresholds_[j - 1] = thr;
    if (spec_.mode == ThresholdMode::kSoft) {
      for (size_t i = 0; i < len; ++i) {
        const float m = std::fabs(d[i]) - thr;
        d[i] = m > 0.0f ? std::copysign(m, d[i]) : 0.0f;
      }
    } else {
      for (size_t i = 0; i < len; ++i)
        if (std::fabs(d[i]) < thr) d[i] = 0.0f;  // pywt keeps |x| >= threshold
    }
  }
  dwt_.inverse(coeffs_.data(), y);
}

StreamingDenoiser::StreamingDenoiser(const DenoiseSpec& spec, size_t window, uint32_t channels)
    : window_(window), hop_(window / 2), channels_(channels), denoiser_(spec, window) {
  if (window < 4 || (window & (window - 1)))
    throw std::invalid_argument("denoise: window must be a power of two >= 4, got " + std::to_string(window));
  if (channels < 1 || channels > 4096)
    throw std::invalid_argument("denoise: channels must be 1..4096, got " + std::to_string(channels));
  weight_.resize(window);
  for (size_t i = 0; i < window; ++i) {
    const double s = std::sin(std::numbers::pi * (double(i) + 0.5) / double(window));
    weight_[i] = float(s * s);
  }
  input_.assign(size_t(channels) * window, 0.0f);
  ola_.assign(size_t(channels) * window, 0.0f);
  ready_.assign(size_t(channels) * hop_, 0.0f);
  block_.resize(window);
}

void StreamingDenoiser::reset() noexcept {
  std::fill(input_.begin(), input_.end(), 0.0f);
  std::fill(ola_.begin(), ola_.end(), 0.0f);
  std::fill(ready_.begin(), ready_.end(), 0.0f);
  fill_ = 0;
}

void StreamingDenoiser::run_window(uint32_t c) noexcept {
  float* in = input_.data() + size_t(c) * window_;
  float* ola = ola_.data() + size_t(c) * window_;
  denoiser_.process(in, block_.data());
  for (size_t i = 0; i < window_; ++i) ola[i] += weight_[i] * block_[i];
  // The first hop has now had both of its windows: it is finished.
  std::copy_n(ola, hop_, ready_.data() + size_t(c) * hop_);
  std::copy(ola + hop_, ola + window_, ola);
  std::fill(ola + (window_ - hop_), ola + window_, 0.0f);
  std::copy(in + hop_, in + window_, in);  // slide the input window by one hop
}

void StreamingDenoiser::process(const float* in, size_t in_stride, uint32_t frames, float* out,
                                size_t out_stride) noexcept {
  uint32_t done = 0;
  while (done < frames) {
    const size_t k = std::min<size_t>(hop_ - fill_, frames - done);
    for (uint32_t c = 0; c < channels_; ++c) {
      std::copy_n(in + c * in_stride + done, k, input_.data() + size_t(c) * window_ + hop_ + fill_);
      std::copy_n(ready_.data() + size_t(c) * hop_ + fill_, k, out + c * out_stride + done);
    }
    fill_ += k;
    done += uint32_t(k);
    if (fill_ == hop_) {
      for (uint32_t c = 0; c < channels_; ++c) run_window(c);
      fill_ = 0;
    }
  }
}

}  // namespace vigil
