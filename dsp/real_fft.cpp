#include "dsp/real_fft.hpp"

#include <fftw3.h>

#include "dsp/simd.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <numbers>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

using simd::load4;
using simd::shuffle;
using simd::store4;
using simd::v4f;

// The real signal x of n = 2m samples, read as z[j] = x[2j] + i x[2j+1], has Z = DFT_m(z); with
// E, O the DFTs of x's even and odd samples and W = exp(-2 pi i / n), for 0 <= k <= m:
//   E[k] = (Z[k] + conj Z[m-k]) / 2,  O[k] = (Z[k] - conj Z[m-k]) / 2i   (Z[m] = Z[0])
//   X[k] = E[k] + W^k O[k],  X[m-k] = conj(E[k] - W^k O[k]).
// Both passes take the pairs (k, m-k) four at a time: k..k+3 ascending, m-k-3..m-k read and written
// reversed, on split real/imaginary lanes; w_re, w_im: W^k for k = 0..m/2.

// In place: spectrum holds Z[0..m-1] (2m floats) and becomes X[0..m] (2m + 2 floats).
void split_spectrum(float* s, size_t m, const float* w_re, const float* w_im) noexcept {
  const float z0_re = s[0], z0_im = s[1];
  s[0] = z0_re + z0_im;  // X[0] = E[0] + O[0]
  s[1] = 0.0f;
  s[2 * m] = z0_re - z0_im;  // X[m] = E[0] - O[0]
  s[2 * m + 1] = 0.0f;
  const v4f half = {0.5f, 0.5f, 0.5f, 0.5f};
  size_t k = 1;
  for (; 2 * k + 6 < m; k += 4) {  // k..k+3 and m-k-3..m-k apart
    const size_t r = m - k - 3;
    const v4f a0 = load4(s + 2 * k), a1 = load4(s + 2 * k + 4);
    const v4f b0 = load4(s + 2 * r), b1 = load4(s + 2 * r + 4);
    const v4f a_re = shuffle<0, 2, 4, 6>(a0, a1), a_im = shuffle<1, 3, 5, 7>(a0, a1);
    const v4f b_re = shuffle<6, 4, 2, 0>(b0, b1), b_im = -shuffle<7, 5, 3, 1>(b0, b1);  // conj Z[m-k-j]
    const v4f e_re = (a_re + b_re) * half, e_im = (a_im + b_im) * half;
    const v4f p_re = (a_re - b_re) * half, p_im = (a_im - b_im) * half;  // O = -i P
    const v4f w_r = load4(w_re + k), w_i = load4(w_im + k);
    const v4f t_re = w_r * p_im + w_i * p_re, t_im = w_i * p_im - w_r * p_re;  // W^k O
    const v4f x_re = e_re + t_re, x_im = e_im + t_im;
    const v4f y_re = e_re - t_re, y_im = t_im - e_im;  // X[m-k-j] in lane j
    store4(s + 2 * k, shuffle<0, 4, 1, 5>(x_re, x_im));
    store4(s + 2 * k + 4, shuffle<2, 6, 3, 7>(x_re, x_im));
    store4(s + 2 * r, shuffle<3, 7, 2, 6>(y_re, y_im));
    store4(s + 2 * r + 4, shuffle<1, 5, 0, 4>(y_re, y_im));
  }
  for (; 2 * k <= m; ++k) {
    const size_t r = m - k;
    const float a_re = s[2 * k], a_im = s[2 * k + 1], b_re = s[2 * r], b_im = -s[2 * r + 1];
    const float e_re = (a_re + b_re) * 0.5f, e_im = (a_im + b_im) * 0.5f;
    const float p_re = (a_re - b_re) * 0.5f, p_im = (a_im - b_im) * 0.5f;
    const float t_re = w_re[k] * p_im + w_im[k] * p_re, t_im = w_im[k] * p_im - w_re[k] * p_re;
    s[2 * k] = e_re + t_re;
    s[2 * k + 1] = e_im + t_im;
    if (r != k) {
      s[2 * r] = e_re - t_re;
      s[2 * r + 1] = t_im - e_im;
    }
  }
}

// The inverse, in place: spectrum holds X[0..m] and becomes 2 Z[0..m-1], so that the backward
// complex FFT of m points gives n x, as FFTW's c2r does. As c2r, the imaginary parts of X[0] and
// X[m] are ignored. With S = X[k] + conj X[m-k], D = X[k] - conj X[m-k] (= 2 W^k O[k]),
// C = conj(W^k) D: 2 Z[k] = S + i C, 2 Z[m-k] = conj S + i conj C.
void merge_spectrum(float* s, size_t m, const float* w_re, const float* w_im) noexcept {
  const float x0 = s[0], xm = s[2 * m];
  s[0] = x0 + xm;
  s[1] = x0 - xm;
  size_t k = 1;
  for (; 2 * k + 6 < m; k += 4) {
    const size_t r = m - k - 3;
    const v4f a0 = load4(s + 2 * k), a1 = load4(s + 2 * k + 4);
    const v4f b0 = load4(s + 2 * r), b1 = load4(s + 2 * r + 4);
    const v4f a_re = shuffle<0, 2, 4, 6>(a0, a1), a_im = shuffle<1, 3, 5, 7>(a0, a1);
    const v4f b_re = shuffle<6, 4, 2, 0>(b0, b1), b_im = -shuffle<7, 5, 3, 1>(b0, b1);
    const v4f s_re = a_re + b_re, s_im = a_im + b_im, d_re = a_re - b_re, d_im = a_im - b_im;
    const v4f w_r = load4(w_re + k), w_i = load4(w_im + k);
    const v4f c_re = w_r * d_re + w_i * d_im, c_im = w_r * d_im - w_i * d_re;
    const v4f z_re = s_re - c_im, z_im = s_im + c_re;  // 2 Z[k+j]
    const v4f y_re = s_re + c_im, y_im = c_re - s_im;  // 2 Z[m-k-j]
    store4(s + 2 * k, shuffle<0, 4, 1, 5>(z_re, z_im));
    store4(s + 2 * k + 4, shuffle<2, 6, 3, 7>(z_re, z_im));
    store4(s + 2 * r, shuffle<3, 7, 2, 6>(y_re, y_im));
    store4(s + 2 * r + 4, shuffle<1, 5, 0, 4>(y_re, y_im));
  }
  for (; 2 * k <= m; ++k) {
    const size_t r = m - k;
    const float a_re = s[2 * k], a_im = s[2 * k + 1], b_re = s[2 * r], b_im = -s[2 * r + 1];
    const float s_re = a_re + b_re, s_im = a_im + b_im, d_re = a_re - b_re, d_im = a_im - b_im;
    const float c_re = w_re[k] * d_re + w_im[k] * d_im, c_im = w_re[k] * d_im - w_im[k] * d_re;
    s[2 * k] = s_re - c_im;
    s[2 * k + 1] = s_im + c_re;
    if (r != k) {
      s[2 * r] = s_re + c_im;
      s[2 * r + 1] = c_re - s_im;
    }
  }
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
  const size_t m = n / 2;
  twiddle_re_.resize(m / 2 + 1);
  twiddle_im_.resize(m / 2 + 1);
  for (size_t k = 0; k <= m / 2; ++k) {
    const double angle = 2.0 * std::numbers::pi * double(k) / double(n);
    twiddle_re_[k] = float(std::cos(angle));
    twiddle_im_[k] = float(-std::sin(angle));
  }
  auto* time = reinterpret_cast<fftwf_complex*>(in.get());
  auto* c = reinterpret_cast<fftwf_complex*>(spec.get());
  std::lock_guard<std::mutex> lock(planner_mutex());
  forward_plan_ = fftwf_plan_dft_1d(int(m), time, c, FFTW_FORWARD, flags);
  // The merged spectrum is scratch by then (inverse() documents it overwritten).
  inverse_plan_ = fftwf_plan_dft_1d(int(m), c, time, FFTW_BACKWARD, flags | FFTW_DESTROY_INPUT);
  if (!forward_plan_ || !inverse_plan_) {
    if (forward_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(forward_plan_));
    if (inverse_plan_) fftwf_destroy_plan(static_cast<fftwf_plan>(inverse_plan_));
    throw std::runtime_error("RealFft: FFTW could not plan a complex FFT of size " + std::to_string(m) +
                             " for a real FFT of size " + std::to_string(n));
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
  // An out-of-place complex plan leaves its input as it was.
  fftwf_execute_dft(static_cast<fftwf_plan>(forward_plan_), reinterpret_cast<fftwf_complex*>(const_cast<float*>(in)),
                    reinterpret_cast<fftwf_complex*>(spectrum));
  split_spectrum(spectrum, n_ / 2, twiddle_re_.data(), twiddle_im_.data());
}

void RealFft::inverse(float* spectrum, float* out) const noexcept {
  merge_spectrum(spectrum, n_ / 2, twiddle_re_.data(), twiddle_im_.data());
  fftwf_execute_dft(static_cast<fftwf_plan>(inverse_plan_), reinterpret_cast<fftwf_complex*>(spectrum),
                    reinterpret_cast<fftwf_complex*>(out));
}

}  // namespace vigil
