// RealFft: a forward/inverse real FFT pair of one size on FFTW3 single precision, with the
// spectrum in split form (separate real and imaginary arrays) so that spectral products
// vectorise. Planning happens in the constructor (not thread-safe in FFTW: serialised here by a
// global mutex); execute() is RT-safe and may run on any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace vigil {

// fftwf_malloc'ed float array (SIMD-aligned), freed with fftwf_free.
struct FftwFree {
  void operator()(float* p) const noexcept;
};
using FftwBuffer = std::unique_ptr<float[], FftwFree>;
FftwBuffer make_fftw_buffer(size_t floats);  // zero-filled; throws std::bad_alloc

enum class FftPlanning { kEstimate, kMeasure };

class RealFft {
 public:
  // n: 2..2^24, even. Throws std::invalid_argument / std::runtime_error (plan failure).
  explicit RealFft(size_t n, FftPlanning planning = FftPlanning::kEstimate);
  ~RealFft();
  RealFft(const RealFft&) = delete;
  RealFft& operator=(const RealFft&) = delete;

  size_t size() const noexcept { return n_; }
  size_t bins() const noexcept { return n_ / 2 + 1; }

  // in: n reals; re, im: bins() each. All pointers from make_fftw_buffer (or equally aligned).
  void forward(const float* in, float* re, float* im) const noexcept;
  // Unnormalised inverse: out = n * x for the x whose spectrum is (re, im). re/im are not kept.
  void inverse(const float* re, const float* im, float* out) const noexcept;

 private:
  size_t n_;
  void* forward_plan_ = nullptr;
  void* inverse_plan_ = nullptr;
};

}  // namespace vigil
