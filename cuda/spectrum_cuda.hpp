// SpectrumCuda: the CUDA twin of dsp/WelchPsd, plus plain windowed magnitude spectra. Rows of
// nfft samples are windowed (periodic window, as WelchPsd), transformed by one batched real cuFFT
// call, and reduced on the device: |X| per bin and row (magnitude), or the one-sided Welch PSD
// (mean removed per segment, segments every nfft/2, density scaling, mean over segments).
// Device pointers in and out; only the PSD's bins (a few KB) need cross to the host, where
// psd_band_energy (dsp/welch_psd.hpp) gives band energies as for the CPU twin.
// Thread: one caller at a time (the work buffers are the object's).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dsp/window.hpp"

namespace vigil::cuda {

class SpectrumCuda {
 public:
  // nfft: even, 4..2^22; max_rows: the most spectra (rows, or Welch segments) one FFT call
  // transforms, 1..65536, nfft * max_rows <= 2^28; rate_hz > 0 (PSD scaling and bin spacing).
  // Throws std::invalid_argument or CudaError.
  SpectrumCuda(uint32_t nfft, uint32_t max_rows, double rate_hz, WindowSpec window = {WindowKind::kHann},
               cudaStream_t stream = nullptr);
  ~SpectrumCuda();
  SpectrumCuda(const SpectrumCuda&) = delete;
  SpectrumCuda& operator=(const SpectrumCuda&) = delete;

  uint32_t bins() const noexcept { return nfft_ / 2 + 1; }
  uint32_t nfft() const noexcept { return nfft_; }
  double bin_hz(size_t k) const noexcept { return double(k) * rate_hz_ / double(nfft_); }

  // mag[r * bins() + k] = |rfft(w * x_r)[k]| for rows r < rows <= max_rows, x_r = d_x + r * nfft.
  // Asynchronous on the stream. (The FFT is planned for max_rows: fewer rows cost as many.)
  cudaError_t magnitude(const float* d_x, uint32_t rows, float* d_mag) noexcept;

  // Welch PSD of d_x[0 .. n) as WelchPsd::compute: bins() doubles to d_psd (device), *segments
  // gets the count (0 when n < nfft: then d_psd is zeros). Any number of segments, max_rows per
  // FFT call. Asynchronous on the stream.
  cudaError_t welch(const float* d_x, size_t n, double* d_psd, size_t* segments) noexcept;

 private:
  void release() noexcept;

  uint32_t nfft_, max_rows_;
  double rate_hz_, scale_;
  cudaStream_t stream_;
  float* d_window_ = nullptr;
  float* d_rows_ = nullptr;   // windowed rows, the FFT's input
  void* d_spec_ = nullptr;    // float2 [max_rows][bins]
  double* d_sum_ = nullptr;   // Welch power sums per bin
  int plan_ = 0;
};

// Host memory in and out (vigil-dsp --backend cuda psd): the Welch PSD of x[0 .. n), n >= nperseg,
// bins nperseg/2 + 1 values as WelchPsd::compute. Throws std::invalid_argument or CudaError.
std::vector<double> welch_psd_cuda(const float* x, size_t n, uint32_t nperseg, double rate_hz, WindowSpec window);

}  // namespace vigil::cuda
