// RealFft against a direct DFT in double precision: the forward spectrum of random reals, the
// unnormalised inverse of a random spectrum (FFTW's c2r: X[0]'s and X[n/2]'s imaginary parts
// ignored), the round trip, and the split-array forms against the interleaved ones, at sizes where
// n/2 is odd, a power of two, or too small for the vectorised pairs (n < 16), each output poisoned
// with NaN before the transform.
#include "dsp/real_fft.hpp"
#include "../support/tolerances.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace vigil {
namespace {

const size_t kSizes[] = {2, 4, 6, 10, 14, 16, 18, 22, 30, 32, 34, 64, 100, 256, 1000, 1024, 4098, 8192};

// exp(sign 2 pi i t / n) for t = 0..n-1: the direct DFTs index it by (j k) mod n.
std::vector<std::complex<double>> roots(size_t n, double sign) {
  std::vector<std::complex<double>> w(n);
  for (size_t t = 0; t < n; ++t) w[t] = std::polar(1.0, sign * 2.0 * std::numbers::pi * double(t) / double(n));
  return w;
}

// The float transform's error grows with log2 n and with the signal's norm (sqrt n for unit
// variance); 1e-6 is about 8 float epsilons. A wrong pair or a twiddle one bin off errs by ~1e-3
// of the norm and more.
double tolerance(size_t n) { return 1e-6 * std::sqrt(double(n)) * (std::log2(double(n)) + 1.0); }

TEST(RealFft, ForwardMatchesADirectDft) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g;
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    RealFft fft(n);
    FftwBuffer x = make_fftw_buffer(n), spec = make_fftw_buffer(2 * fft.bins());
    for (size_t i = 0; i < n; ++i) x[i] = g(rng);
    for (size_t i = 0; i < 2 * fft.bins(); ++i) spec[i] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> x_before(x.get(), x.get() + n);
    fft.forward(x.get(), spec.get());
    const auto w = roots(n, -1.0);
    double worst = 0;
    for (size_t k = 0; k < fft.bins(); ++k) {
      std::complex<double> want = 0;
      for (size_t j = 0; j < n; ++j) want += double(x[j]) * w[(j * k) % n];
      const std::complex<double> got(spec[2 * k], spec[2 * k + 1]);
      ASSERT_FALSE(std::isnan(got.real()) || std::isnan(got.imag())) << "bin " << k << " not written";
      worst = std::max(worst, std::abs(got - want));
    }
    EXPECT_LT(worst, tolerance(n));
    EXPECT_EQ(spec[1], 0.0f);  // X[0] and X[n/2] are real, as FFTW's r2c writes them
    EXPECT_EQ(spec[2 * (fft.bins() - 1) + 1], 0.0f);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(x[i], x_before[i]) << "the input changed at " << i;
  }
}

TEST(RealFft, InverseMatchesADirectInverseDft) {
  std::mt19937 rng(8);
  std::normal_distribution<float> g;
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    RealFft fft(n);
    const size_t m = n / 2;
    FftwBuffer spec = make_fftw_buffer(2 * fft.bins()), y = make_fftw_buffer(n);
    for (size_t i = 0; i < 2 * fft.bins(); ++i) spec[i] = g(rng);  // X[0], X[m]: imaginary junk too
    std::vector<std::complex<double>> x(fft.bins());
    for (size_t k = 0; k <= m; ++k) x[k] = {spec[2 * k], spec[2 * k + 1]};
    for (size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    fft.inverse(spec.get(), y.get());
    // The Hermitian sum over all n bins, X[0] and X[m] taken as real: n times the inverse.
    const auto w = roots(n, 1.0);
    double worst = 0;
    for (size_t j = 0; j < n; ++j) {
      double want = x[0].real() + (j % 2 ? -1.0 : 1.0) * x[m].real();
      for (size_t k = 1; k < m; ++k) want += 2.0 * (x[k] * w[(j * k) % n]).real();
      ASSERT_FALSE(std::isnan(y[j])) << "sample " << j << " not written";
      worst = std::max(worst, std::abs(double(y[j]) - want));
    }
    EXPECT_LT(worst, tolerance(n));
  }
}

// Plans FFTW measured (other algorithms than its estimates) up to 1024 points; the larger sizes
// with estimated plans: measuring them is two thirds of this test's time, and under qemu (the
// aarch64 suite) over three minutes of it. Measured plans of 4096 points: real_fft_wisdom_test.
TEST(RealFft, InverseOfForwardIsNTimesTheInput) {
  std::mt19937 rng(9);
  std::normal_distribution<float> g;
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    RealFft fft(n, n <= 1024 ? FftPlanning::kMeasure : FftPlanning::kEstimate);
    FftwBuffer x = make_fftw_buffer(n), spec = make_fftw_buffer(2 * fft.bins()), y = make_fftw_buffer(n);
    for (size_t i = 0; i < n; ++i) x[i] = g(rng);
    for (size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    fft.forward(x.get(), spec.get());
    fft.inverse(spec.get(), y.get());
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(y[i] / float(n), x[i], test::kFloatValueAbs * (std::log2(double(n)) + 1.0)) << i;
  }
}

// The split-array forms against the interleaved ones (themselves checked against the direct DFT
// above): the same spectrum, the same inverse, and the inverse leaves its split input as it was.
TEST(RealFft, SplitFormsMatchTheInterleavedOnes) {
  std::mt19937 rng(10);
  std::normal_distribution<float> g;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    RealFft fft(n);
    const size_t bins = fft.bins();
    FftwBuffer x = make_fftw_buffer(n), spec = make_fftw_buffer(2 * bins), scratch = make_fftw_buffer(2 * bins);
    std::vector<float> re(bins, nan), im(bins, nan);
    for (size_t i = 0; i < n; ++i) x[i] = g(rng);
    fft.forward(x.get(), spec.get());
    for (size_t i = 0; i < 2 * bins; ++i) scratch[i] = nan;
    fft.forward_split(x.get(), scratch.get(), re.data(), im.data());
    const double tol = tolerance(n);
    for (size_t k = 0; k < bins; ++k) {
      ASSERT_NEAR(re[k], spec[2 * k], tol) << k;
      ASSERT_NEAR(im[k], spec[2 * k + 1], tol) << k;
    }
    // A random spectrum (X[0] and X[m] with imaginary parts, which both forms ignore).
    for (size_t k = 0; k < bins; ++k) {
      re[k] = spec[2 * k] = g(rng);
      im[k] = spec[2 * k + 1] = g(rng);
    }
    const std::vector<float> re_before = re, im_before = im;
    FftwBuffer y = make_fftw_buffer(n), y_split = make_fftw_buffer(n);
    for (size_t i = 0; i < n; ++i) y_split[i] = nan;
    fft.inverse(spec.get(), y.get());
    fft.inverse_split(re.data(), im.data(), scratch.get(), y_split.get());
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(y_split[i], y[i], tol) << i;
    EXPECT_EQ(re, re_before);
    EXPECT_EQ(im, im_before);
  }
}

// inverse_of_product against inverse_split of the same spectrum formed here: sum + x h, and x h.
TEST(RealFft, InverseOfProductIsTheInverseOfSumPlusProduct) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    RealFft fft(n);
    const size_t bins = fft.bins();
    std::vector<float> xr(bins), xi(bins), hr(bins), hi(bins), sr(bins), si(bins), yr(bins), yi(bins);
    for (size_t k = 0; k < bins; ++k) {
      xr[k] = g(rng), xi[k] = g(rng), hr[k] = g(rng), hi[k] = g(rng), sr[k] = g(rng), si[k] = g(rng);
    }
    FftwBuffer scratch = make_fftw_buffer(2 * bins), want = make_fftw_buffer(n), got = make_fftw_buffer(n);
    for (bool with_sum : {true, false}) {
      SCOPED_TRACE(with_sum ? "sum + x h" : "x h");
      for (size_t k = 0; k < bins; ++k) {
        yr[k] = (with_sum ? sr[k] : 0.0f) + (xr[k] * hr[k] - xi[k] * hi[k]);
        yi[k] = (with_sum ? si[k] : 0.0f) + (xr[k] * hi[k] + xi[k] * hr[k]);
      }
      fft.inverse_split(yr.data(), yi.data(), scratch.get(), want.get());
      for (size_t i = 0; i < n; ++i) got[i] = nan;
      fft.inverse_of_product(xr.data(), xi.data(), hr.data(), hi.data(), with_sum ? sr.data() : nullptr,
                             with_sum ? si.data() : nullptr, scratch.get(), got.get());
      for (size_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 2 * tolerance(n)) << i;
    }
  }
}

TEST(RealFft, RefusesOddAndOutOfRangeSizes) {
  EXPECT_THROW(RealFft(0), std::invalid_argument);
  EXPECT_THROW(RealFft(7), std::invalid_argument);
  EXPECT_THROW(RealFft((size_t(1) << 24) + 2), std::invalid_argument);
}

// vigild's start line names the FFT library it runs with: FFTW 3's version, then the SIMD kinds
// it was built with (e.g. "fftw-3.3.10-sse2-avx"; scripts/build-fftw.sh's adds avx2, avx512).
TEST(RealFft, NamesTheFftLibraryAndItsSimdKinds) {
  const std::string v = fft_library_version();
  EXPECT_EQ(v.rfind("fftw-3.", 0), 0u) << v;
  EXPECT_GT(v.size(), std::string("fftw-3.").size()) << v;
}

}  // namespace
}  // namespace vigil
