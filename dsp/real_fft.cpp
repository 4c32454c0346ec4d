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
// The inverse undoes it: with S = X[k] + conj X[m-k], D = X[k] - conj X[m-k] (= 2 W^k O[k]) and
// C = conj(W^k) D, 2 Z[k] = S + i C and 2 Z[m-k] = conj S + i conj C; the backward complex FFT of
// 2 Z gives n x, as FFTW's c2r does (which ignores the imaginary parts of X[0] and X[m]: so do we).
// The passes take the pairs (k, m-k) four at a time, k..k+3 ascending and m-k-3..m-k reversed, on
// split real/imaginary lanes (T = v4f), and the last few one by one (T = float); w: W^k, k <= m/2.

// Forward: a = Z[k], b = Z[m-k] -> x = X[k], y = X[m-k].
template <typename T>
inline void split_pair(T a_re, T a_im, T b_re, T b_im, T w_re, T w_im, T& x_re, T& x_im, T& y_re, T& y_im) noexcept {
  b_im = -b_im;  // conj Z[m-k]
  const T e_re = (a_re + b_re) * 0.5f, e_im = (a_im + b_im) * 0.5f;
  const T p_re = (a_re - b_re) * 0.5f, p_im = (a_im - b_im) * 0.5f;  // O = -i P
  const T t_re = w_re * p_im + w_im * p_re, t_im = w_im * p_im - w_re * p_re;  // W^k O
  x_re = e_re + t_re;
  x_im = e_im + t_im;
  y_re = e_re - t_re;
  y_im = t_im - e_im;
}

// Inverse: a = X[k], b = X[m-k] -> x = 2 Z[k], y = 2 Z[m-k].
template <typename T>
inline void merge_pair(T a_re, T a_im, T b_re, T b_im, T w_re, T w_im, T& x_re, T& x_im, T& y_re, T& y_im) noexcept {
  b_im = -b_im;  // conj X[m-k]
  const T s_re = a_re + b_re, s_im = a_im + b_im, d_re = a_re - b_re, d_im = a_im - b_im;
  const T c_re = w_re * d_re + w_im * d_im, c_im = w_re * d_im - w_im * d_re;
  x_re = s_re - c_im;
  x_im = s_im + c_re;
  y_re = s_re + c_im;
  y_im = c_re - s_im;
}

// Four interleaved pairs at p as split lanes, ascending (lane j: p[2j], p[2j+1]) or reversed
// (lane j: the pair 3 - j), and back.
inline void load_ascending(const float* p, v4f& re, v4f& im) noexcept {
  const v4f lo = load4(p), hi = load4(p + 4);
  re = shuffle<0, 2, 4, 6>(lo, hi);
  im = shuffle<1, 3, 5, 7>(lo, hi);
}
inline void load_reversed(const float* p, v4f& re, v4f& im) noexcept {
  const v4f lo = load4(p), hi = load4(p + 4);
  re = shuffle<6, 4, 2, 0>(lo, hi);
  im = shuffle<7, 5, 3, 1>(lo, hi);
}
inline void store_ascending(float* p, v4f re, v4f im) noexcept {
  store4(p, shuffle<0, 4, 1, 5>(re, im));
  store4(p + 4, shuffle<2, 6, 3, 7>(re, im));
}
inline void store_reversed(float* p, v4f re, v4f im) noexcept {
  store4(p, shuffle<3, 7, 2, 6>(re, im));
  store4(p + 4, shuffle<1, 5, 0, 4>(re, im));
}
inline v4f reversed(v4f v) noexcept { return shuffle<3, 2, 1, 0>(v, v); }

// The pairs (k, m-k), 1 <= k <= m/2, of an interleaved spectrum through `pair` (split_pair or
// merge_pair), in place.
template <typename Pair>
void pairs_in_place(float* s, size_t m, const float* w_re, const float* w_im, Pair pair) noexcept {
  size_t k = 1;
  for (; 2 * k + 6 < m; k += 4) {  // k..k+3 and m-k-3..m-k apart
    const size_t r = m - k - 3;
    v4f a_re, a_im, b_re, b_im, x_re, x_im, y_re, y_im;
    load_ascending(s + 2 * k, a_re, a_im);
    load_reversed(s + 2 * r, b_re, b_im);
    pair(a_re, a_im, b_re, b_im, load4(w_re + k), load4(w_im + k), x_re, x_im, y_re, y_im);
    store_ascending(s + 2 * k, x_re, x_im);
    store_reversed(s + 2 * r, y_re, y_im);
  }
  for (; 2 * k <= m; ++k) {
    const size_t r = m - k;
    float x_re, x_im, y_re, y_im;
    pair(s[2 * k], s[2 * k + 1], s[2 * r], s[2 * r + 1], w_re[k], w_im[k], x_re, x_im, y_re, y_im);
    s[2 * k] = x_re;
    s[2 * k + 1] = x_im;
    if (r != k) {
      s[2 * r] = y_re;
      s[2 * r + 1] = y_im;
    }
  }
}

// In place on the interleaved spectrum: Z[0..m-1] (2m floats) becomes X[0..m] (2m + 2 floats).
void split_interleaved(float* s, size_t m, const float* w_re, const float* w_im) noexcept {
  const float z0_re = s[0], z0_im = s[1];
  s[0] = z0_re + z0_im;  // X[0] = E[0] + O[0], X[m] = E[0] - O[0]
  s[1] = 0.0f;
  s[2 * m] = z0_re - z0_im;
  s[2 * m + 1] = 0.0f;
  pairs_in_place(s, m, w_re, w_im, [](auto&&... v) noexcept { split_pair(v...); });
}

// Z[0..m-1] interleaved in z to X[0..m] in split arrays.
void split_to_split(const float* z, float* re, float* im, size_t m, const float* w_re, const float* w_im) noexcept {
  re[0] = z[0] + z[1];
  im[0] = 0.0f;
  re[m] = z[0] - z[1];
  im[m] = 0.0f;
  size_t k = 1;
  for (; 2 * k + 6 < m; k += 4) {
    const size_t r = m - k - 3;
    v4f a_re, a_im, b_re, b_im, x_re, x_im, y_re, y_im;
    load_ascending(z + 2 * k, a_re, a_im);
    load_reversed(z + 2 * r, b_re, b_im);
    split_pair(a_re, a_im, b_re, b_im, load4(w_re + k), load4(w_im + k), x_re, x_im, y_re, y_im);
    store4(re + k, x_re);
    store4(im + k, x_im);
    store4(re + r, reversed(y_re));
    store4(im + r, reversed(y_im));
  }
  for (; 2 * k <= m; ++k) {  // k == m - k: x and y are one bin, alike but for W^(m/2)'s rounding
    const size_t r = m - k;
    split_pair(z[2 * k], z[2 * k + 1], z[2 * r], z[2 * r + 1], w_re[k], w_im[k], re[k], im[k], re[r], im[r]);
  }
}

// In place on the interleaved spectrum: X[0..m] becomes 2 Z[0..m-1].
void merge_interleaved(float* s, size_t m, const float* w_re, const float* w_im) noexcept {
  const float x0 = s[0], xm = s[2 * m];
  s[0] = x0 + xm;
  s[1] = x0 - xm;
  pairs_in_place(s, m, w_re, w_im, [](auto&&... v) noexcept { merge_pair(v...); });
}

// X[0..m] from `bins` (split arrays, below) to 2 Z[0..m-1] interleaved in z. Bins: four(k, re, im)
// gives X[k..k+3] in lanes, one(k, re, im) X[k].
template <typename Bins>
void merge_to_interleaved(const Bins& bins, float* z, size_t m, const float* w_re, const float* w_im) noexcept {
  float x0_re, x0_im, xm_re, xm_im;
  bins.one(0, x0_re, x0_im);
  bins.one(m, xm_re, xm_im);
  z[0] = x0_re + xm_re;
  z[1] = x0_re - xm_re;
  size_t k = 1;
  for (; 2 * k + 6 < m; k += 4) {
    const size_t r = m - k - 3;
    v4f a_re, a_im, b_re, b_im, x_re, x_im, y_re, y_im;
    bins.four(k, a_re, a_im);
    bins.four(r, b_re, b_im);
    merge_pair(a_re, a_im, reversed(b_re), reversed(b_im), load4(w_re + k), load4(w_im + k), x_re, x_im, y_re, y_im);
    store_ascending(z + 2 * k, x_re, x_im);
    store_reversed(z + 2 * r, y_re, y_im);
  }
  for (; 2 * k <= m; ++k) {  // k == m - k: as in split_to_split
    const size_t r = m - k;
    float a_re, a_im, b_re, b_im;
    bins.one(k, a_re, a_im);
    bins.one(r, b_re, b_im);
    merge_pair(a_re, a_im, b_re, b_im, w_re[k], w_im[k], z[2 * k], z[2 * k + 1], z[2 * r], z[2 * r + 1]);
  }
}

// A spectrum as it is.
struct SplitBins {
  const float *re, *im;
  void four(size_t k, v4f& r, v4f& i) const noexcept {
    r = load4(re + k);
    i = load4(im + k);
  }
  void one(size_t k, float& r, float& i) const noexcept {
    r = re[k];
    i = im[k];
  }
};

// The spectrum sum + x h (complex products bin by bin), or x h alone where sum_re is null.
struct ProductBins {
  const float *x_re, *x_im, *h_re, *h_im, *sum_re, *sum_im;
  template <typename T>
  static void product(T xr, T xi, T hr, T hi, T& r, T& i) noexcept {
    r = xr * hr - xi * hi;
    i = xr * hi + xi * hr;
  }
  void four(size_t k, v4f& r, v4f& i) const noexcept {
    product(load4(x_re + k), load4(x_im + k), load4(h_re + k), load4(h_im + k), r, i);
    if (sum_re) {
      r = load4(sum_re + k) + r;
      i = load4(sum_im + k) + i;
    }
  }
  void one(size_t k, float& r, float& i) const noexcept {
    product(x_re[k], x_im[k], h_re[k], h_im[k], r, i);
    if (sum_re) {
      r = sum_re[k] + r;
      i = sum_im[k] + i;
    }
  }
};
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

const char* fft_library_version() noexcept { return fftwf_version; }

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
  split_interleaved(spectrum, n_ / 2, twiddle_re_.data(), twiddle_im_.data());
}

void RealFft::inverse(float* spectrum, float* out) const noexcept {
  merge_interleaved(spectrum, n_ / 2, twiddle_re_.data(), twiddle_im_.data());
  fftwf_execute_dft(static_cast<fftwf_plan>(inverse_plan_), reinterpret_cast<fftwf_complex*>(spectrum),
                    reinterpret_cast<fftwf_complex*>(out));
}

void RealFft::forward_split(const float* in, float* scratch, float* re, float* im) const noexcept {
  fftwf_execute_dft(static_cast<fftwf_plan>(forward_plan_), reinterpret_cast<fftwf_complex*>(const_cast<float*>(in)),
                    reinterpret_cast<fftwf_complex*>(scratch));
  split_to_split(scratch, re, im, n_ / 2, twiddle_re_.data(), twiddle_im_.data());
}

void RealFft::inverse_split(const float* re, const float* im, float* scratch, float* out) const noexcept {
  merge_to_interleaved(SplitBins{re, im}, scratch, n_ / 2, twiddle_re_.data(), twiddle_im_.data());
  fftwf_execute_dft(static_cast<fftwf_plan>(inverse_plan_), reinterpret_cast<fftwf_complex*>(scratch),
                    reinterpret_cast<fftwf_complex*>(out));
}

void RealFft::inverse_of_product(const float* x_re, const float* x_im, const float* h_re, const float* h_im,
                                 const float* sum_re, const float* sum_im, float* scratch, float* out) const noexcept {
  merge_to_interleaved(ProductBins{x_re, x_im, h_re, h_im, sum_re, sum_im}, scratch, n_ / 2, twiddle_re_.data(),
                       twiddle_im_.data());
  fftwf_execute_dft(static_cast<fftwf_plan>(inverse_plan_), reinterpret_cast<fftwf_complex*>(scratch),
                    reinterpret_cast<fftwf_complex*>(out));
}

}  // namespace vigil
