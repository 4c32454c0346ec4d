// Convolution and correlation.
//   convolve_full: offline y = x * h with all n + m - 1 outputs (numpy.convolve, mode 'full').
//     Direct form when the shorter operand has <= StreamingFirBank::kDirectMaxTaps samples (the
//     measured switch-over), otherwise the longer one streams through single-block overlap-save
//     with the shorter one as the filter; memory stays O(m + FFT size), whatever n is.
//   StreamingCorrelator: matched filter over a stream, r[n] = sum_k h[k] x[n - (M-1) + k], i.e.
//     the correlation of the last M samples with the kernel, by the same engines as fir_bank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dsp/streaming_fir_bank.hpp"

namespace vigil {

enum class ConvolutionMethod { kAuto, kDirect, kFft };

ConvolutionMethod choose_convolution_method(size_t n, size_t m) noexcept;

// y: n + m - 1 values. n, m >= 1 (throws std::invalid_argument otherwise).
void convolve_full(const float* x, size_t n, const float* h, size_t m, float* y,
                   ConvolutionMethod method = ConvolutionMethod::kAuto);

class StreamingCorrelator {
 public:
  // kernel: 1..2^20 samples; channels, max_frames, max_latency_frames as StreamingFirBank.
  StreamingCorrelator(const std::vector<float>& kernel, uint32_t channels, uint32_t max_frames,
                      uint32_t max_latency_frames);
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) noexcept {
    bank_.process(in, in_stride, frames, out, out_stride);
  }
  uint32_t latency_frames() const noexcept { return bank_.latency_frames(); }
  void reset() noexcept { bank_.reset(); }

 private:
  static std::vector<std::vector<float>> reversed(const std::vector<float>& k);
  StreamingFirBank bank_;
};

}  // namespace vigil
