#include "cuda/wavelet_denoiser_cuda.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.hpp"
#include "dsp/dwt.hpp"

namespace vigil::cuda {

WaveletDenoiserCuda::WaveletDenoiserCuda(const DenoiseSpec& spec, size_t n, cudaStream_t stream)
    : spec_(spec), n_(0), levels_(0), stream_(stream) {
  const Wavelet w = denoise_wavelet(spec);
  const unsigned levels = denoise_levels(spec, n);
  Dwt::check(n, levels);
  if (w.length() > size_t(kMaxWaveletTaps))
    throw std::invalid_argument("denoise: wavelet '" + w.name + "' is longer than the GPU's 40 taps");
  if (!(spec.threshold_scale >= 0.0 && spec.threshold_scale <= 1e6))
    throw std::invalid_argument("denoise: threshold_scale must be 0..1e6, got " + std::to_string(spec.threshold_scale));
  n_ = uint32_t(n);
  levels_ = levels;
  filters_.len = int(w.length());
  for (size_t k = 0; k < w.length(); ++k) {
    filters_.lo[k] = float(w.dec_lo[k]);
    filters_.hi[k] = float(w.dec_hi[k]);
  }
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_coeffs_), size_t(n_) * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_work_a_), std::max<size_t>(n_ / 2, 1) * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_work_b_), std::max<size_t>(n_ / 4, 1) * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_thr_), levels_ * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_select_), 2 * sizeof(SelectState)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_hist_), 2 * kSelectBins * sizeof(uint32_t)));
    VIGIL_CUDA_CHECK(cudaMemset(d_hist_, 0, 2 * kSelectBins * sizeof(uint32_t)));  // each pass leaves it zeroed
    VIGIL_CUDA_CHECK(cudaMemset(d_thr_, 0, levels_ * sizeof(float)));
  } catch (...) {
    release();
    throw;
  }
}

WaveletDenoiserCuda::~WaveletDenoiserCuda() { release(); }

void WaveletDenoiserCuda::release() noexcept {
  for (void* p : {static_cast<void*>(d_coeffs_), static_cast<void*>(d_work_a_), static_cast<void*>(d_work_b_),
                  static_cast<void*>(d_thr_), static_cast<void*>(d_select_), static_cast<void*>(d_hist_)})
    cudaFree(p);
  d_coeffs_ = d_work_a_ = d_work_b_ = d_thr_ = nullptr;
  d_select_ = nullptr;
  d_hist_ = nullptr;
}

// Level j's approximation (length n >> j) lives in work A for odd j, work B for even j.
cudaError_t WaveletDenoiserCuda::forward(const float* d_x, float* d_coeffs) noexcept {
  const float* a = d_x;
  uint32_t m = n_;
  for (unsigned j = 1; j <= levels_; ++j) {
    if (m <= kFusedLevelsMax) return launch_dwt_analyse_fused(filters_, a, m, levels_ - j + 1, d_coeffs, stream_);
    float* ca = j == levels_ ? d_coeffs : (j % 2 ? d_work_a_ : d_work_b_);
    VIGIL_CUDA_RETURN_IF_ERROR(launch_dwt_analyse(filters_, a, m, ca, d_coeffs + m / 2, stream_));
    a = ca;
    m /= 2;
  }
  return cudaSuccess;
}

// The output of synthesis level j (length n >> (j - 1)) goes to d_x for j = 1, else work A for
// even j and work B for odd j: never the buffer the level reads.
cudaError_t WaveletDenoiserCuda::inverse(const float* d_coeffs, float* d_x) noexcept {
  auto out_of = [&](unsigned j) { return j == 1 ? d_x : (j % 2 == 0 ? d_work_a_ : d_work_b_); };
  const uint32_t m0 = n_ >> levels_;
  unsigned fused = 0;
  while (fused < levels_ && (uint64_t(m0) << (fused + 1)) <= kFusedLevelsMax) ++fused;
  unsigned j = levels_;  // the next level to undo
  const float* ca = d_coeffs;
  if (fused > 0) {
    j = levels_ - fused + 1;  // the last level the fused kernel undoes
    VIGIL_CUDA_RETURN_IF_ERROR(launch_dwt_synthesise_fused(filters_, d_coeffs, m0, fused, out_of(j), stream_));
    ca = out_of(j);
    if (j == 1) return cudaSuccess;
    --j;
  }
  for (;; --j) {
    const uint32_t m = n_ >> (j - 1);
    VIGIL_CUDA_RETURN_IF_ERROR(launch_dwt_synthesise(filters_, ca, d_coeffs + m / 2, m, out_of(j), stream_));
    ca = out_of(j);
    if (j == 1) break;
  }
  return cudaSuccess;
}

cudaError_t WaveletDenoiserCuda::median_threshold(const float* d_v, size_t count, float* d_thr,
                                                   unsigned thr_count) noexcept {
  const bool odd = count % 2 == 1;
  const uint32_t upper = uint32_t(count / 2), lower = odd ? upper : upper - 1;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_select_init(d_select_, lower, upper, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(launch_select_pass(d_v, count, 21, 11, d_select_, d_hist_, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(launch_select_pass(d_v, count, 10, 11, d_select_, d_hist_, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(launch_select_pass(d_v, count, 0, 10, d_select_, d_hist_, stream_));
  const double universal = std::sqrt(2.0 * std::log(double(n_))) * spec_.threshold_scale;
  return launch_threshold_from_median(d_select_, odd, universal, d_thr, thr_count, stream_);
}

cudaError_t WaveletDenoiserCuda::estimate_thresholds() noexcept {
  if (spec_.noise == NoiseEstimate::kFinest)  // cD_1 sets every level's threshold
    return median_threshold(d_coeffs_ + n_ / 2, n_ - n_ / 2, d_thr_, levels_);
  for (unsigned j = 1; j <= levels_; ++j)
    VIGIL_CUDA_RETURN_IF_ERROR(median_threshold(d_coeffs_ + (n_ >> j), n_ >> j, d_thr_ + (j - 1), 1));
  return cudaSuccess;
}

cudaError_t WaveletDenoiserCuda::process(const float* d_x, float* d_y) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(forward(d_x, d_coeffs_));
  VIGIL_CUDA_RETURN_IF_ERROR(estimate_thresholds());
  VIGIL_CUDA_RETURN_IF_ERROR(launch_threshold(d_coeffs_, n_, levels_, d_thr_, spec_.mode == ThresholdMode::kSoft, stream_));
  return inverse(d_coeffs_, d_y);
}

std::vector<float> WaveletDenoiserCuda::last_thresholds() const {
  std::vector<float> t(levels_);
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  VIGIL_CUDA_CHECK(cudaMemcpy(t.data(), d_thr_, t.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return t;
}

std::vector<float> wavelet_cuda(WaveletOp op, const DenoiseSpec& spec, const float* x, size_t n) {
  std::string why;
  if (!device_available(&why)) throw CudaError(cudaErrorNoDevice, "no usable CUDA device: " + why);
  WaveletDenoiserCuda den(spec, n);
  float *d_x = nullptr, *d_y = nullptr;
  std::vector<float> y(n);
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), n * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_y), n * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(op == WaveletOp::kDenoise   ? den.process(d_x, d_y)
                     : op == WaveletOp::kForward ? den.forward(d_x, d_y)
                                                 : den.inverse(d_x, d_y));
    VIGIL_CUDA_CHECK(cudaMemcpy(y.data(), d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
  } catch (...) {
    cudaFree(d_x);
    cudaFree(d_y);
    throw;
  }
  cudaFree(d_x);
  cudaFree(d_y);
  return y;
}

}  // namespace vigil::cuda
