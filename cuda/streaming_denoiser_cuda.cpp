#include "cuda/streaming_denoiser_cuda.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

StreamingDenoiserCuda::StreamingDenoiserCuda(const DenoiseSpec& spec, size_t window, uint32_t lanes,
                                             uint32_t max_frames, cudaStream_t stream)
    : window_(uint32_t(window)), hop_(uint32_t(window / 2)), lanes_(lanes), max_frames_(max_frames), stream_(stream) {
  if (window < 4 || window > kStreamingDenoiseMaxWindow || (window & (window - 1)))
    throw std::invalid_argument("denoise (CUDA): window must be a power of two 4..4096, got " + std::to_string(window));
  if (lanes < 1 || lanes > 4096)
    throw std::invalid_argument("denoise (CUDA): lanes must be 1..4096, got " + std::to_string(lanes));
  if (max_frames < 1 || max_frames > (1u << 24))
    throw std::invalid_argument("denoise (CUDA): max_frames must be 1..2^24, got " + std::to_string(max_frames));
  if (!(spec.threshold_scale >= 0.0 && spec.threshold_scale <= 1e6))
    throw std::invalid_argument("denoise: threshold_scale must be 0..1e6, got " + std::to_string(spec.threshold_scale));
  const Wavelet w = denoise_wavelet(spec);
  const unsigned levels = denoise_levels(spec, window);
  if (levels < 1)
    throw std::invalid_argument("denoise (CUDA): a window of " + std::to_string(window) + " allows no level of '" +
                                w.name + "'");
  if (w.length() > size_t(kMaxWaveletTaps))
    throw std::invalid_argument("denoise: wavelet '" + w.name + "' is longer than the GPU's 40 taps");
  params_.filters.len = int(w.length());
  for (size_t k = 0; k < w.length(); ++k) {
    params_.filters.lo[k] = float(w.dec_lo[k]);
    params_.filters.hi[k] = float(w.dec_hi[k]);
  }
  params_.n = window_;
  params_.levels = levels;
  params_.soft = spec.mode == ThresholdMode::kSoft;
  params_.per_level = spec.noise == NoiseEstimate::kPerLevel;
  params_.universal = std::sqrt(2.0 * std::log(double(window))) * spec.threshold_scale;  // as WaveletDenoiser
  params_.lanes = lanes_;
  params_.hop = hop_;
  max_windows_ = (hop_ - 1 + max_frames_) / hop_;
  // The CPU twin's weights, computed the same way.
  std::vector<float> weight(window_);
  for (size_t i = 0; i < window_; ++i) {
    const double s = std::sin(std::numbers::pi * (double(i) + 0.5) / double(window_));
    weight[i] = float(s * s);
  }
  try {
    VIGIL_CUDA_CHECK(prepare_denoise_windows(window_));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_weight_), window_ * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_weight_, weight.data(), window_ * sizeof(float), cudaMemcpyHostToDevice));
    for (float*& h : d_hist_) VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&h), size_t(lanes_) * window_ * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_ready_), size_t(lanes_) * hop_ * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_pending_), size_t(lanes_) * hop_ * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_wout_), size_t(lanes_) * max_windows_ * window_ * sizeof(float)));
    params_.weight = d_weight_;
    reset();
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  } catch (...) {
    release();
    throw;
  }
}

StreamingDenoiserCuda::~StreamingDenoiserCuda() { release(); }

void StreamingDenoiserCuda::release() noexcept {
  for (float* p : {d_weight_, d_hist_[0], d_hist_[1], d_ready_, d_pending_, d_wout_}) cudaFree(p);
  d_weight_ = d_hist_[0] = d_hist_[1] = d_ready_ = d_pending_ = d_wout_ = nullptr;
}

void StreamingDenoiserCuda::reset() {
  for (float* h : d_hist_) VIGIL_CUDA_CHECK(cudaMemsetAsync(h, 0, size_t(lanes_) * window_ * sizeof(float), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_ready_, 0, size_t(lanes_) * hop_ * sizeof(float), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_pending_, 0, size_t(lanes_) * hop_ * sizeof(float), stream_));
  fill_ = 0;
  cur_ = 0;
}

cudaError_t StreamingDenoiserCuda::process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out,
                                           size_t out_stride) noexcept {
  if (frames > max_frames_) return cudaErrorInvalidValue;
  if (frames == 0) return cudaSuccess;
  const uint32_t windows = (fill_ + frames) / hop_;
  DenoiseWindowsParams p = params_;
  p.windows = windows;
  p.first_end = hop_ - fill_;
  p.hist = d_hist_[cur_];
  p.in = d_in;
  p.in_stride = in_stride;
  p.wout = d_wout_;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_denoise_windows(p, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(launch_denoise_emit(d_wout_, d_ready_, d_pending_, lanes_, windows, window_, hop_, fill_,
                                                 frames, d_out, out_stride, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(launch_denoise_advance(d_wout_, d_ready_, d_pending_, d_hist_[cur_], d_in, in_stride, lanes_,
                                                    windows, window_, hop_, frames, d_hist_[1 - cur_], stream_));
  cur_ = 1 - cur_;
  fill_ = (fill_ + frames) % hop_;
  return cudaSuccess;
}

}  // namespace vigil::cuda
