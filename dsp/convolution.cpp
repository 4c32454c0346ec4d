#include "dsp/convolution.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vigil {

ConvolutionMethod choose_convolution_method(size_t n, size_t m) noexcept {
  return std::min(n, m) <= StreamingFirBank::kDirectMaxTaps ? ConvolutionMethod::kDirect : ConvolutionMethod::kFft;
}

void convolve_full(const float* x, size_t n, const float* h, size_t m, float* y, ConvolutionMethod method) {
  if (n < 1 || m < 1)
    throw std::invalid_argument("convolve_full: both inputs need at least 1 sample, got " + std::to_string(n) +
                                " and " + std::to_string(m));
  if (m > (size_t(1) << 20) && n > (size_t(1) << 20))
    throw std::invalid_argument("convolve_full: the shorter input may have at most 1048576 samples");
  if (m > n) {  // convolution commutes: filter with the shorter one
    std::swap(x, h);
    std::swap(n, m);
  }
  if (method == ConvolutionMethod::kAuto) method = choose_convolution_method(n, m);
  const std::vector<std::vector<float>> taps = {std::vector<float>(h, h + m)};
  constexpr uint32_t kChunk = 1 << 16;
  std::vector<float> in(kChunk), out(kChunk);
  uint32_t latency = 0;
  std::unique_ptr<FirBank> direct;
  std::unique_ptr<PartitionedFirBank> fft;
  if (method == ConvolutionMethod::kDirect) {
    direct = std::make_unique<FirBank>(taps, 1, kChunk);
  } else {
    const uint32_t size = PartitionedFirBank::best_fft_size(m);
    fft = std::make_unique<PartitionedFirBank>(taps, 1, PartitionedFirBank::single_block(m, size));
    latency = fft->latency_frames();
  }
  // Feed x, then zeros until every output (n + m - 1 of them, after the latency) has come out.
  const size_t total_out = n + m - 1, total_in = total_out + latency;
  for (size_t at = 0; at < total_in; at += kChunk) {
    const auto k = uint32_t(std::min<size_t>(kChunk, total_in - at));
    for (uint32_t i = 0; i < k; ++i) in[i] = at + i < n ? x[at + i] : 0.0f;
    if (direct)
      direct->process(in.data(), kChunk, k, out.data(), kChunk);
    else
      fft->process(in.data(), kChunk, k, out.data(), kChunk);
    for (uint32_t i = 0; i < k; ++i) {
      const size_t t = at + i;
      if (t >= latency) y[t - latency] = out[i];
    }
  }
}

std::vector<std::vector<float>> StreamingCorrelator::reversed(const std::vector<float>& k) {
  if (k.empty() || k.size() > (size_t(1) << 20))
    throw std::invalid_argument("correlator: kernel must have 1..1048576 samples, got " + std::to_string(k.size()));
  return {std::vector<float>(k.rbegin(), k.rend())};
}

StreamingCorrelator::StreamingCorrelator(const std::vector<float>& kernel, uint32_t channels, uint32_t max_frames,
                                         uint32_t max_latency_frames)
    : bank_(reversed(kernel), channels, max_frames, max_latency_frames) {}

}  // namespace vigil
