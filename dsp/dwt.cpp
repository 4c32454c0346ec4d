// Periodized analysis: cA[i] = sum_k lo[k] a[(2i + L/2 - k) mod m] (checked against pywt by
// scripts/gen_wavelet_filters.py); synthesis is its transpose. Both run in polyphase form on
// wrap-padded copies, so every output is a weighted sum of contiguous rows with no index wrapping
// (dsp/row_sums: many outputs accumulate in registers as the taps stream past).
#include "dsp/dwt.hpp"

#include "dsp/row_sums.hpp"

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {

// dst[j] = src[(j - pad) mod m] for j in [0, m + 2 pad): periodic extension on both sides.
void wrap_pad(const float* src, size_t m, size_t pad, float* dst) noexcept {
  std::memcpy(dst + pad, src, m * sizeof(float));
  for (size_t j = 0; j < pad; ++j) {
    dst[pad - 1 - j] = src[(m - 1 - (j % m))];
    dst[pad + m + j] = src[j % m];
  }
}

}  // namespace

unsigned Dwt::max_level(size_t n, size_t filter_length) noexcept {
  if (filter_length < 2) return 0;
  unsigned j = 0;
  while ((n >> (j + 1)) >= filter_length - 1 && (n >> (j + 1)) > 0) ++j;
  return j;
}

void Dwt::check(size_t n, unsigned levels) {
  if (n < 2 || n > (size_t(1) << 28))
    throw std::invalid_argument("Dwt: length must be 2..268435456, got " + std::to_string(n));
  if (levels < 1 || levels > 28 || (n >> levels) == 0)
    throw std::invalid_argument("Dwt: levels must be 1..log2(" + std::to_string(n) + "), got " + std::to_string(levels));
  if (n % (size_t(1) << levels) != 0) {
    const std::string multiple = "a length that is a multiple of " + std::to_string(size_t(1) << levels);
    const int fit = std::countr_zero(n);  // the most levels this length allows
    const std::string hint = fit == 0 ? "an odd length allows no level: " + multiple
                                      : "at most " + std::to_string(fit) + (fit == 1 ? " level" : " levels") +
                                            " at this length, or " + multiple;
    throw std::invalid_argument("Dwt: length " + std::to_string(n) + " must be divisible by 2^levels = " +
                                std::to_string(size_t(1) << levels) + " (" + hint + ")");
  }
}

Dwt::Dwt(const Wavelet& wavelet, size_t n, unsigned levels) : n_(n), levels_(levels) {
  check(n, levels);
  lo_.assign(wavelet.dec_lo.begin(), wavelet.dec_lo.end());
  hi_.assign(wavelet.dec_hi.begin(), wavelet.dec_hi.end());
  const size_t len = lo_.size();
  work_a_.resize(n);
  work_b_.resize(n);
  even_.resize(n / 2 + len + 1);
  odd_.resize(n / 2 + len + 1);
  pad_a_.resize(n + 2 * len + 2);  // analysis: the padded signal; synthesis: padded cA
  pad_d_.resize(n / 2 + len + 2);
  out_even_.resize(n / 2);
  out_odd_.resize(n / 2);
}

// cA[i] = sum_k lo[k] P[2i + s - k + pad] with P the wrap-padded signal (pad = L) and s = L/2.
// q_k = s + pad - k >= 1: an even q_k reads the even phase at i + q_k/2, an odd one the odd
// phase at i + (q_k - 1)/2.
void Dwt::analyse(const float* a, size_t m, float* ca, float* cd) noexcept {
  const size_t len = lo_.size(), pad = len, s = len / 2, half = m / 2;
  float* padded = pad_a_.data();
  wrap_pad(a, m, pad, padded);
  const size_t total = m + 2 * pad;  // even: m and pad are
  for (size_t j = 0; j < total / 2; ++j) {
    even_[j] = padded[2 * j];
    odd_[j] = padded[2 * j + 1];
  }
  const float* src[64];
  for (size_t k = 0; k < len; ++k) {
    const size_t q = s + pad - k;
    src[k] = q % 2 == 0 ? even_.data() + q / 2 : odd_.data() + (q - 1) / 2;
  }
  row_sums::sum2(lo_.data(), hi_.data(), src, len, half, ca, cd);
}

// The transpose: a[t] collects lo[k] cA[i] + hi[k] cD[i] for every (i, k) with
// 2i + s - k = t (mod m). Even t = 2u takes k = s (mod 2) with i = u + (k - s)/2; odd t = 2u + 1
// takes the other k with i = u + (k - s + 1)/2. With cA, cD wrap-padded by padh on each side,
// every i is a contiguous read from u onwards.
void Dwt::synthesise(const float* ca, const float* cd, size_t m, float* a) noexcept {
  const size_t len = lo_.size(), s = len / 2, half = m / 2, padh = len / 2 + 1;
  wrap_pad(ca, half, padh, pad_a_.data());
  wrap_pad(cd, half, padh, pad_d_.data());
  float w[128];
  const float* src[128];
  for (int phase = 0; phase < 2; ++phase) {
    size_t taps = 0;
    for (size_t k = 0; k < len; ++k) {
      if ((k + s + size_t(phase)) % 2 != 0) continue;  // k = s + phase (mod 2)
      // i - u = (k - s + phase) / 2, shifted by padh into the padded arrays.
      const long off = (long(k) - long(s) + phase) / 2 + long(padh);
      w[taps] = lo_[k];
      src[taps++] = pad_a_.data() + off;
      w[taps] = hi_[k];
      src[taps++] = pad_d_.data() + off;
    }
    row_sums::sum(w, src, taps, half, phase == 0 ? out_even_.data() : out_odd_.data());
  }
  for (size_t u = 0; u < half; ++u) {
    a[2 * u] = out_even_[u];
    a[2 * u + 1] = out_odd_[u];
  }
}

void Dwt::forward(const float* x, float* coeffs) noexcept {
  const float* a = x;
  size_t m = n_;
  float* bufs[2] = {work_a_.data(), work_b_.data()};
  for (unsigned j = 1; j <= levels_; ++j) {
    float* ca = j == levels_ ? coeffs : bufs[j % 2];
    analyse(a, m, ca, coeffs + m / 2);
    a = ca;
    m /= 2;
  }
}

void Dwt::inverse(const float* coeffs, float* x) noexcept {
  size_t m = n_ >> (levels_ - 1);  // length after undoing the deepest level
  const float* ca = coeffs;
  float* bufs[2] = {work_a_.data(), work_b_.data()};
  for (unsigned j = levels_; j >= 1; --j) {
    float* a = j == 1 ? x : bufs[j % 2];
    synthesise(ca, coeffs + m / 2, m, a);
    ca = a;
    m *= 2;
  }
}

}  // namespace vigil
