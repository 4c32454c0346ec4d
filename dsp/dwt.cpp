// Periodized analysis: cA[i] = sum_k lo[k] a[(2i + L/2 - k) mod m] (checked against pywt by
// scripts/gen_wavelet_filters.py). Away from the edges the index runs contiguously, so the sum is a
// dot product of the reversed filter with a[2i + L/2 - L + 1 ...]; only edge outputs wrap.
#include "dsp/dwt.hpp"

#include <stdexcept>
#include <string>

namespace vigil {

unsigned Dwt::max_level(size_t n, size_t filter_length) noexcept {
  if (filter_length < 2) return 0;
  unsigned j = 0;
  while ((n >> (j + 1)) >= filter_length - 1 && (n >> (j + 1)) > 0) ++j;
  return j;
}

Dwt::Dwt(const Wavelet& wavelet, size_t n, unsigned levels) : n_(n), levels_(levels) {
  if (n < 2 || n > (size_t(1) << 28))
    throw std::invalid_argument("Dwt: length must be 2..268435456, got " + std::to_string(n));
  if (levels < 1 || levels > 28 || (n >> levels) == 0)
    throw std::invalid_argument("Dwt: levels must be 1..log2(" + std::to_string(n) + "), got " + std::to_string(levels));
  if (n % (size_t(1) << levels) != 0)
    throw std::invalid_argument("Dwt: length " + std::to_string(n) + " must be divisible by 2^levels = " +
                                std::to_string(size_t(1) << levels));
  lo_.assign(wavelet.dec_lo.begin(), wavelet.dec_lo.end());
  hi_.assign(wavelet.dec_hi.begin(), wavelet.dec_hi.end());
  rlo_.assign(lo_.rbegin(), lo_.rend());
  rhi_.assign(hi_.rbegin(), hi_.rend());
  work_a_.resize(n);
  work_b_.resize(n);
}

namespace {

// One analysis level: a (m samples) -> ca, cd (m/2 each).
void analyse(const float* a, size_t m, const float* lo, const float* hi, const float* rlo, const float* rhi, size_t len,
             float* ca, float* cd) noexcept {
  const size_t half = m / 2;
  const long shift = long(len / 2);
  for (size_t i = 0; i < half; ++i) {
    const long first = long(2 * i) + shift - long(len) + 1;  // index of rlo[0]
    const long last = long(2 * i) + shift;                   // index of rlo[len-1]
    float sa = 0.0f, sd = 0.0f;
    if (first >= 0 && last < long(m)) {
      const float* p = a + first;
      for (size_t k = 0; k < len; ++k) {
        sa += rlo[k] * p[k];
        sd += rhi[k] * p[k];
      }
    } else {
      for (size_t k = 0; k < len; ++k) {
        long idx = (long(2 * i) + shift - long(k)) % long(m);
        if (idx < 0) idx += long(m);
        sa += lo[k] * a[idx];
        sd += hi[k] * a[idx];
      }
    }
    ca[i] = sa;
    cd[i] = sd;
  }
}

// One synthesis level, the transpose of analyse: ca, cd (m/2 each) -> a (m samples).
void synthesise(const float* ca, const float* cd, size_t m, const float* lo, const float* hi, size_t len,
                float* a) noexcept {
  for (size_t t = 0; t < m; ++t) a[t] = 0.0f;
  const size_t half = m / 2;
  const long shift = long(len / 2);
  for (size_t i = 0; i < half; ++i) {
    const float va = ca[i], vd = cd[i];
    const long first = long(2 * i) + shift - long(len) + 1;
    const long last = long(2 * i) + shift;
    if (first >= 0 && last < long(m)) {
      float* p = a + last;  // a[2i + shift - k] for k = 0..len-1
      for (size_t k = 0; k < len; ++k) p[-long(k)] += lo[k] * va + hi[k] * vd;
    } else {
      for (size_t k = 0; k < len; ++k) {
        long idx = (long(2 * i) + shift - long(k)) % long(m);
        if (idx < 0) idx += long(m);
        a[idx] += lo[k] * va + hi[k] * vd;
      }
    }
  }
}

}  // namespace

void Dwt::forward(const float* x, float* coeffs) noexcept {
  const size_t len = lo_.size();
  const float* a = x;
  size_t m = n_;
  float* bufs[2] = {work_a_.data(), work_b_.data()};
  for (unsigned j = 1; j <= levels_; ++j) {
    float* ca = j == levels_ ? coeffs : bufs[j % 2];
    analyse(a, m, lo_.data(), hi_.data(), rlo_.data(), rhi_.data(), len, ca, coeffs + m / 2);
    a = ca;
    m /= 2;
  }
}

void Dwt::inverse(const float* coeffs, float* x) noexcept {
  const size_t len = lo_.size();
  size_t m = n_ >> (levels_ - 1);  // length after undoing the deepest level
  const float* ca = coeffs;
  float* bufs[2] = {work_a_.data(), work_b_.data()};
  for (unsigned j = levels_; j >= 1; --j) {
    float* a = j == 1 ? x : bufs[j % 2];
    synthesise(ca, coeffs + m / 2, m, lo_.data(), hi_.data(), len, a);
    ca = a;
    m *= 2;
  }
}

}  // namespace vigil
