// DWT against PyWavelets (wavedec, mode periodization) and perfect reconstruction for every wavelet.
#include "dsp/dwt.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

using test::expect_close_to_reference;

TEST(Dwt, Db8Level8EqualsSharedReference) {
  const auto x64 = test::read_f64("input_x.bin");
  const std::vector<float> x(x64.begin(), x64.end());
  const Wavelet w = *find_wavelet("db8");
  EXPECT_EQ(Dwt::max_level(4096, w.length()), 8u);  // pywt.dwt_max_level(4096, 16)
  Dwt dwt(w, 4096, 8);
  std::vector<float> c(4096, -999.0f);
  dwt.forward(x.data(), c.data());
  expect_close_to_reference(c, test::read_f64("db8_wavedec_coeffs.bin"), "db8");
  EXPECT_EQ(dwt.approx_length(), 16u);
  EXPECT_EQ(dwt.detail_offset(1), 2048u);
  EXPECT_EQ(dwt.detail_offset(8), 16u);
}

TEST(Dwt, MoreWaveletsEqualPywt) {
  const auto x64 = test::read_f64("wavelet_x.bin");
  const std::vector<float> x(x64.begin(), x64.end());
  for (const auto& [name, levels] : std::vector<std::pair<std::string, unsigned>>{
           {"haar", 5}, {"db2", 6}, {"db20", 4}, {"sym5", 6}, {"sym20", 3}}) {
    Dwt dwt(*find_wavelet(name), x.size(), levels);
    std::vector<float> c(x.size(), -999.0f);
    dwt.forward(x.data(), c.data());
    expect_close_to_reference(c, test::read_f64("wavedec_" + name + "_" + std::to_string(levels) + ".bin"), name);
  }
}

TEST(Dwt, PerfectReconstructionForEveryWaveletAndDepth) {
  std::mt19937 rng(4);
  std::normal_distribution<float> d;
  for (const std::string& name : wavelet_names()) {
    const Wavelet w = *find_wavelet(name);
    for (size_t n : {size_t(8), size_t(64), size_t(1024)}) {
      std::vector<float> x(n), c(n), y(n, -999.0f);
      for (auto& v : x) v = d(rng);
      for (unsigned levels = 1; (n >> levels) >= 1 && levels <= 10; ++levels) {
        Dwt dwt(w, n, levels);
        dwt.forward(x.data(), c.data());
        dwt.inverse(c.data(), y.data());
        double err = 0;
        for (size_t i = 0; i < n; ++i) err = std::max(err, double(std::fabs(y[i] - x[i])));
        ASSERT_LT(err, 2e-5) << name << " n " << n << " levels " << levels;
        // Orthonormal: energy is preserved (Parseval).
        double ex = 0, ec = 0;
        for (size_t i = 0; i < n; ++i) {
          ex += double(x[i]) * x[i];
          ec += double(c[i]) * c[i];
        }
        ASSERT_NEAR(ec / ex, 1.0, test::kFloatSampleAbs) << name << " n " << n << " levels " << levels;
      }
    }
  }
}

TEST(Dwt, FiltersAreOrthonormalAndNamed) {
  EXPECT_EQ(wavelet_names().size(), 40u);  // haar, db1..db20, sym2..sym20
  for (const std::string& name : wavelet_names()) {
    const Wavelet w = *find_wavelet(name);
    double s = 0, e = 0;
    for (double v : w.rec_lo) {
      s += v;
      e += v * v;
    }
    // The published tables (as pywt carries them) are orthonormal to about 1e-11.
    EXPECT_NEAR(s, std::sqrt(2.0), test::kDoubleChainRel) << name;
    EXPECT_NEAR(e, 1.0, test::kDoubleChainRel) << name;
  }
  EXPECT_EQ(find_wavelet("db20")->length(), 40u);
  EXPECT_EQ(find_wavelet("sym2")->length(), 4u);
  EXPECT_FALSE(find_wavelet("db21"));
  EXPECT_FALSE(find_wavelet("coif1"));
}

TEST(Dwt, RejectsBadSizes) {
  const Wavelet w = *find_wavelet("db4");
  EXPECT_THROW(Dwt(w, 100, 3), std::invalid_argument);  // 100 not divisible by 8
  // The message says how many levels the length allows.
  auto message = [&](size_t n, unsigned levels) {
    try {
      Dwt(w, n, levels);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(100, 3), "Dwt: length 100 must be divisible by 2^levels = 8 (at most 2 levels at this length, "
                             "or a length that is a multiple of 8)");
  EXPECT_EQ(message(1002, 2), "Dwt: length 1002 must be divisible by 2^levels = 4 (at most 1 level at this length, "
                              "or a length that is a multiple of 4)");
  EXPECT_EQ(message(1001, 1), "Dwt: length 1001 must be divisible by 2^levels = 2 (an odd length allows no level: "
                              "a length that is a multiple of 2)");
  EXPECT_THROW(Dwt(w, 64, 0), std::invalid_argument);
  EXPECT_THROW(Dwt(w, 64, 7), std::invalid_argument);
  EXPECT_THROW(Dwt(w, 1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
