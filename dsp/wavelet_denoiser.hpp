// Wavelet denoising (Donoho-Johnstone VisuShrink): DWT -> noise sigma from the median absolute
// deviation of the details -> universal threshold sigma * sqrt(2 ln N) -> soft or hard
// thresholding of every detail level (the approximation is kept) -> inverse DWT. Equals pywt's
// wavedec -> pywt.threshold -> waverec (mode 'periodization').
//
// WaveletDenoiser works on one block of N samples. StreamingDenoiser runs it on windows of N with
// hop N/2, weighted by w[n] = sin^2(pi (n + 0.5) / N) (two overlapping copies sum to exactly 1)
// and overlap-added, so the output is continuous across windows and chunks. Its output is the
// denoised stream delayed by exactly N samples; with threshold_scale 0 it is the input delayed by N.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "dsp/dwt.hpp"
#include "dsp/median_abs.hpp"

namespace vigil {

enum class ThresholdMode { kSoft, kHard };
enum class NoiseEstimate {
  kFinest,    // sigma = median(|cD_1|) / 0.6745, used for every level (Donoho-Johnstone)
  kPerLevel,  // sigma_j = median(|cD_j|) / 0.6745 for each level j (coloured noise)
};

std::optional<ThresholdMode> parse_threshold_mode(std::string_view s) noexcept;
std::optional<NoiseEstimate> parse_noise_estimate(std::string_view s) noexcept;

struct DenoiseSpec {
  std::string wavelet = "db8";
  unsigned levels = 0;  // 0: the deepest level pywt.dwt_max_level allows
  ThresholdMode mode = ThresholdMode::kSoft;
  NoiseEstimate noise = NoiseEstimate::kFinest;
  double threshold_scale = 1.0;  // multiplies the universal threshold; 0 = no denoising (identity)
};

// The wavelet a spec names (throws std::invalid_argument listing the known ones), and the levels
// it asks for on n samples (its own, or the deepest pywt.dwt_max_level allows). Shared with the
// CUDA twin.
Wavelet denoise_wavelet(const DenoiseSpec& spec);
unsigned denoise_levels(const DenoiseSpec& spec, size_t n);

class WaveletDenoiser {
 public:
  // n: block length (divisible by 2^levels). Throws std::invalid_argument (unknown wavelet, ...).
  WaveletDenoiser(const DenoiseSpec& spec, size_t n);

  // y = denoise(x), n samples each; x and y may be the same array. RT-safe.
  void process(const float* x, float* y) noexcept;

  size_t size() const noexcept { return dwt_.size(); }
  unsigned levels() const noexcept { return dwt_.levels(); }
  // Threshold used for detail level j (1 = finest) in the last process() call.
  float last_threshold(unsigned j) const noexcept { return thresholds_[j - 1]; }

 private:
  DenoiseSpec spec_;
  Dwt dwt_;
  std::vector<float> coeffs_, thresholds_;
  MedianAbs median_abs_;  // the noise estimate: median |detail| (exact, radix select)
};

class StreamingDenoiser {
 public:
  // window: N, a power of two >= 2^levels and >= 4; channels: 1..4096.
  StreamingDenoiser(const DenoiseSpec& spec, size_t window, uint32_t channels);

  // in: channel c at in + c * in_stride; out likewise. Any frames count. RT-safe.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) noexcept;
  void reset() noexcept;
  uint32_t latency_frames() const noexcept { return uint32_t(window_); }

 private:
  void run_window(uint32_t c) noexcept;

  size_t window_, hop_;
  uint32_t channels_;
  WaveletDenoiser denoiser_;
  std::vector<float> weight_;   // window_ values
  std::vector<float> input_;    // per channel: the last window_ samples
  std::vector<float> ola_;      // per channel: window_ overlap-add accumulator
  std::vector<float> ready_;    // per channel: hop_ finished output samples
  std::vector<float> block_;    // one window being denoised
  size_t fill_ = 0;             // samples of the current hop received
};

}  // namespace vigil
