#include "cuda/spectrum_cuda.hpp"

#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/spectrum.cuh"

namespace vigil::cuda {

SpectrumCuda::SpectrumCuda(uint32_t nfft, uint32_t max_rows, double rate_hz, WindowSpec window, cudaStream_t stream)
    : nfft_(nfft), max_rows_(max_rows), rate_hz_(rate_hz), scale_(0), stream_(stream) {
  if (nfft < 4 || nfft > (1u << 22) || nfft % 2)
    throw std::invalid_argument("SpectrumCuda: nfft must be even and 4..4194304, got " + std::to_string(nfft));
  if (max_rows < 1 || max_rows > 65536 || uint64_t(nfft) * max_rows > (uint64_t(1) << 28))
    throw std::invalid_argument("SpectrumCuda: max_rows must be 1..65536 with nfft * max_rows <= 2^28, got " +
                                std::to_string(max_rows) + " rows of " + std::to_string(nfft));
  if (!(rate_hz > 0) || !std::isfinite(rate_hz))
    throw std::invalid_argument("SpectrumCuda: rate must be > 0, got " + std::to_string(rate_hz));
  // Periodic window, as WelchPsd: the symmetric window of nfft + 1 points without its last one.
  const std::vector<double> w = make_window(window, size_t(nfft) + 1);
  std::vector<float> wf(nfft);
  double sum_sq = 0;
  for (uint32_t i = 0; i < nfft; ++i) {
    wf[i] = float(w[i]);
    sum_sq += w[i] * w[i];
  }
  scale_ = 1.0 / (rate_hz * sum_sq);
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_window_), size_t(nfft) * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_rows_), size_t(nfft) * max_rows * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(&d_spec_, size_t(bins()) * max_rows * sizeof(float2)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_sum_), size_t(bins()) * sizeof(double)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_window_, wf.data(), wf.size() * sizeof(float), cudaMemcpyHostToDevice));
    // Rows past a short call's count are transformed too (the plan is for max_rows): never unset.
    VIGIL_CUDA_CHECK(cudaMemset(d_rows_, 0, size_t(nfft) * max_rows * sizeof(float)));
    cufftHandle plan = 0;
    int dims[1] = {int(nfft)};
    check_cufft(cufftPlanMany(&plan, 1, dims, nullptr, 1, int(nfft), nullptr, 1, int(bins()), CUFFT_R2C, int(max_rows)),
                "plan (spectrum)");
    plan_ = int(plan);
    check_cufft(cufftSetStream(plan, stream_), "set stream (spectrum)");
  } catch (...) {
    release();
    throw;
  }
}

SpectrumCuda::~SpectrumCuda() { release(); }

void SpectrumCuda::release() noexcept {
  if (plan_) cufftDestroy(cufftHandle(plan_));
  plan_ = 0;
  cudaFree(d_window_);
  cudaFree(d_rows_);
  cudaFree(d_spec_);
  cudaFree(d_sum_);
  d_window_ = d_rows_ = nullptr;
  d_spec_ = nullptr;
  d_sum_ = nullptr;
}

cudaError_t SpectrumCuda::magnitude(const float* d_x, uint32_t rows, float* d_mag) noexcept {
  if (rows > max_rows_) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_window_rows(d_x, nfft_, d_window_, nfft_, rows, d_rows_, stream_));
  if (cufftExecR2C(cufftHandle(plan_), d_rows_, static_cast<cufftComplex*>(d_spec_)) != CUFFT_SUCCESS)
    return cudaErrorLaunchFailure;
  return launch_magnitude(static_cast<const float2*>(d_spec_), size_t(rows) * bins(), d_mag, stream_);
}

cudaError_t SpectrumCuda::welch(const float* d_x, size_t n, double* d_psd, size_t* segments) noexcept {
  const uint32_t step = nfft_ / 2;
  const size_t total = n < nfft_ ? 0 : (n - nfft_) / step + 1;
  if (segments) *segments = total;
  VIGIL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_sum_, 0, size_t(bins()) * sizeof(double), stream_));
  for (size_t first = 0; first < total; first += max_rows_) {
    const uint32_t rows = uint32_t(std::min<size_t>(max_rows_, total - first));
    // Segment s starts at s * step: rows overlap by half, read in place from d_x.
    VIGIL_CUDA_RETURN_IF_ERROR(
        launch_detrend_window_rows(d_x + first * step, step, d_window_, nfft_, rows, d_rows_, stream_));
    if (cufftExecR2C(cufftHandle(plan_), d_rows_, static_cast<cufftComplex*>(d_spec_)) != CUFFT_SUCCESS)
      return cudaErrorLaunchFailure;
    VIGIL_CUDA_RETURN_IF_ERROR(launch_power_sum(static_cast<const float2*>(d_spec_), bins(), rows, d_sum_, stream_));
  }
  if (total == 0) return cudaMemsetAsync(d_psd, 0, size_t(bins()) * sizeof(double), stream_);
  return launch_welch_finish(d_sum_, bins(), scale_, double(total), d_psd, stream_);
}

std::vector<double> welch_psd_cuda(const float* x, size_t n, uint32_t nperseg, double rate_hz, WindowSpec window) {
  if (n < nperseg)
    throw std::invalid_argument("welch: " + std::to_string(n) + " samples are fewer than nperseg " + std::to_string(nperseg));
  std::string why;
  if (!device_available(&why)) throw CudaError(cudaErrorNoDevice, "no usable CUDA device: " + why);
  const size_t segments = (n - nperseg) / (nperseg / 2) + 1;
  const size_t most = std::min<size_t>(65536, (size_t(1) << 28) / std::max<uint32_t>(nperseg, 1));
  SpectrumCuda spectrum(nperseg, uint32_t(std::max<size_t>(1, std::min(segments, most))), rate_hz, window);
  float* d_x = nullptr;
  double* d_psd = nullptr;
  std::vector<double> psd(spectrum.bins());
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), n * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_psd), psd.size() * sizeof(double)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(spectrum.welch(d_x, n, d_psd, nullptr));
    VIGIL_CUDA_CHECK(cudaMemcpy(psd.data(), d_psd, psd.size() * sizeof(double), cudaMemcpyDeviceToHost));
  } catch (...) {
    cudaFree(d_x);
    cudaFree(d_psd);
    throw;
  }
  cudaFree(d_x);
  cudaFree(d_psd);
  return psd;
}

}  // namespace vigil::cuda
