#include "dsp/real_fft.hpp"

#include <fftw3.h>

#include <cerrno>
#include <cstdio>
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
  const unsigned flags = planning == FftPlanning::kPatient   ? FFTW_PATIENT
                         : planning == FftPlanning::kMeasure ? FFTW_MEASURE
                                                             : FFTW_ESTIMATE;
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

bool fft_import_wisdom(const std::string& path, std::string& why) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) {
    why = path + ": " + std::strerror(errno);
    return false;
  }
  std::lock_guard<std::mutex> lock(planner_mutex());
  const int ok = fftwf_import_wisdom_from_file(f);
  std::fclose(f);
  if (!ok) why = path + ": not FFTW single-precision wisdom";
  return ok != 0;
}

bool fft_export_wisdom(const std::string& path, std::string& why) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    why = tmp + ": " + std::strerror(errno);
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftwf_export_wisdom_to_file(f);
  }
  const bool written = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !written) {
    why = tmp + ": write failed: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    why = path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

void RealFft::forward(const float* in, float* spectrum) const noexcept {
  fftwf_execute_dft_r2c(static_cast<fftwf_plan>(forward_plan_), const_cast<float*>(in),
                        reinterpret_cast<fftwf_complex*>(spectrum));
}

void RealFft::inverse(float* spectrum, float* out) const noexcept {
  fftwf_execute_dft_c2r(static_cast<fftwf_plan>(inverse_plan_), reinterpret_cast<fftwf_complex*>(spectrum), out);
}

}  // namespace vigil
