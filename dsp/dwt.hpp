// Dwt: multi-level discrete wavelet transform with periodization, as
// pywt.wavedec/waverec(mode='periodization'). Coefficients in pywt order [cA_J, cD_J, ..., cD_1]:
// cA_J at [0, n/2^J), cD_j at [n/2^j, n/2^(j-1)). Orthonormal filters make the inverse the exact
// transpose of the forward transform: perfect reconstruction to float32 rounding.
#pragma once

#include <cstddef>
#include <vector>

#include "dsp/wavelet.hpp"

namespace vigil {

class Dwt {
 public:
  // n: signal length, 2..2^28, divisible by 2^levels; levels: 1..log2(n).
  // Throws std::invalid_argument naming the parameter and the valid range.
  Dwt(const Wavelet& wavelet, size_t n, unsigned levels);

  // x: n samples; coeffs: n values. RT-safe (no allocation).
  void forward(const float* x, float* coeffs) noexcept;
  // coeffs: n values (not modified); x: n samples. RT-safe.
  void inverse(const float* coeffs, float* x) noexcept;

  size_t size() const noexcept { return n_; }
  unsigned levels() const noexcept { return levels_; }
  // Where detail level j (1 = finest .. levels) starts and how long it is.
  size_t detail_offset(unsigned j) const noexcept { return n_ >> j; }
  size_t detail_length(unsigned j) const noexcept { return n_ >> j; }
  size_t approx_length() const noexcept { return n_ >> levels_; }

  // The deepest level pywt.dwt_max_level would allow: floor(log2(n / (filter_length - 1))).
  static unsigned max_level(size_t n, size_t filter_length) noexcept;
  // Throws std::invalid_argument unless n and levels are as the constructor needs (also for the
  // CUDA twin).
  static void check(size_t n, unsigned levels);

 private:
  void analyse(const float* a, size_t m, float* ca, float* cd) noexcept;
  void synthesise(const float* ca, const float* cd, size_t m, float* a) noexcept;

  std::vector<float> lo_, hi_;   // dec_lo, dec_hi in float
  size_t n_;
  unsigned levels_;
  std::vector<float> work_a_, work_b_;
  // Polyphase scratch: wrap-padded even/odd input samples (analysis), wrap-padded coefficients
  // and even/odd outputs (synthesis).
  std::vector<float> even_, odd_, pad_a_, pad_d_, out_even_, out_odd_;
};

}  // namespace vigil
