#include "dsp/real_fft.hpp"

#include <fftw3.h>

#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void FftwFree::operator()(float* p) const noexcept { fftwf_free(p); }

FftwBuffer make_fftw_buffer(size_t floats) {
  auto* p = static_cast<float*>(fftwf_malloc(sizeof(float) * (floats ? floats : 1)));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, sizeof(float) * (floats ? floats : 1));
  return FftwBuffer(p);
}

RealFft::RealFft(size_t n, FftPlanning planning) : n_(n) {
  if (n < 2 || n > (size_t(1) << 24) || n % 2)
    throw std::invalid_argument("RealFft: size must be even and 2..16777216, got " + std::to_string(n));
  FftwBuffer in = make_fftw_buffer(n), spec = make_fftw_buffer(2 * bins());
  const unsigned flags = (planning == FftPlanning::kMeasure ? FFTW_MEASURE : FFTW_ESTIMATE);
  auto* c = reinterpret_cast<fftwf_complex*>(spec.get());
  std::lock_guard<std::mutex> lock(planner_mutex());
  forward_plan_ = fftwf_plan_dft_r2c_1d(int(n), in.get(), c, flags);
  inverse_plan_ = fftwf_plan_dft_c2r_1d(int(n), c, in.get(), flags);
  if (!forward_plan_ || !inverse_plan_) {
    if (forward_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(forward_plan_));
    if (inverse_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(inverse_plan_));
    throw std::runtime_error("RealFft: FFTW could not plan a real FFT of size " + std::to_string(n));
  }
}

RealFft::~RealFft() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  fftwf_destroy_plan(static_cast<fftwf_plan>(forward_plan_));
  fftwf_destroy_plan(static_cast<fftwf_plan>(inverse_plan_));
}

void RealFft::forward(const float* in, float* spectrum) const noexcept {
  fftwf_execute_dft_r2c(static_cast<fftwf_plan>(forward_plan_), const_cast<float*>(in),
                        reinterpret_cast<fftwf_complex*>(spectrum));
}

void RealFft::inverse(float* spectrum, float* out) const noexcept {
  fftwf_execute_dft_c2r(static_cast<fftwf_plan>(inverse_plan_), reinterpret_cast<fftwf_complex*>(spectrum), out);
}

}  // namespace vigil
