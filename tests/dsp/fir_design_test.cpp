#include "dsp/fir_design.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <numbers>
#include <random>

#include "dsp/fir_bank.hpp"

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

double gain_at(const std::vector<double>& h, double f_over_rate) {
  std::complex<double> acc = 0;
  for (size_t n = 0; n < h.size(); ++n)
    acc += h[n] * std::polar(1.0, -2 * std::numbers::pi * f_over_rate * double(n));
  return std::abs(acc);
}

TEST(FirDesign, LowpassEqualsScipyFirwin) {
  // firwin(63, 0.2): cutoff 0.2 x Nyquist; with rate 2 Hz, Nyquist is 1 Hz and cutoff 0.2 Hz.
  const std::vector<double> ref = test::read_f64("fir63_h.bin");
  ASSERT_EQ(ref.size(), 63u);
  const std::vector<double> h = design_fir({FilterType::kLowpass, 63, 0.2, 0, 2.0, {WindowKind::kHamming}});
  ASSERT_EQ(h.size(), 63u);
  for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(h[i], ref[i], test::kFirDesignAbs) << "tap " << i;
}

TEST(FirDesign, EachTypeHasUnitGainWhereFirwinScales) {
  const double rate = 48000;
  const auto lp = design_fir({FilterType::kLowpass, 101, 3000, 0, rate, {WindowKind::kHann}});
  const auto hp = design_fir({FilterType::kHighpass, 101, 3000, 0, rate, {WindowKind::kBlackman}});
  const auto bp = design_fir({FilterType::kBandpass, 101, 4000, 8000, rate, {WindowKind::kKaiser, 6.0}});
  const auto bs = design_fir({FilterType::kBandstop, 101, 4000, 8000, rate, {WindowKind::kHamming}});
  EXPECT_NEAR(gain_at(lp, 0.0), 1.0, test::kDoubleFormulaRel);
  EXPECT_NEAR(gain_at(hp, 0.5), 1.0, test::kDoubleFormulaRel);
  EXPECT_NEAR(gain_at(bp, 6000 / rate), 1.0, test::kDoubleFormulaRel);
  EXPECT_NEAR(gain_at(bs, 0.0), 1.0, test::kDoubleFormulaRel);
  // And they reject what they should: 40 dB down well inside each stop band.
  EXPECT_LT(gain_at(lp, 10000 / rate), 0.01);
  EXPECT_LT(gain_at(hp, 500 / rate), 0.01);
  EXPECT_LT(gain_at(bp, 1000 / rate), 0.01);
  EXPECT_LT(gain_at(bs, 6000 / rate), 0.01);
  // Linear phase: symmetric taps.
  for (size_t i = 0; i < 101; ++i) EXPECT_NEAR(bp[i], bp[100 - i], test::kDoubleUlpsAbs);
}

TEST(FirDesign, WindowsHaveTheirTextbookValues) {
  const auto hann = make_window({WindowKind::kHann}, 5);
  const std::vector<double> want_hann = {0, 0.5, 1, 0.5, 0};
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(hann[i], want_hann[i], test::kDoubleUlpsAbs);
  const auto hamming = make_window({WindowKind::kHamming}, 3);
  EXPECT_NEAR(hamming[0], 0.08, test::kDoubleUlpsAbs);
  EXPECT_NEAR(hamming[1], 1.0, test::kDoubleUlpsAbs);
  const auto blackman = make_window({WindowKind::kBlackman}, 3);
  EXPECT_NEAR(blackman[0], 0.0, test::kDoubleUlpsAbs);
  EXPECT_NEAR(blackman[1], 1.0, test::kDoubleUlpsAbs);
  // scipy.signal.windows.kaiser(5, 8.6)[0] = 1/I0(8.6) = 0.0003... ; centre 1.
  const auto kaiser = make_window({WindowKind::kKaiser, 8.6}, 5);
  EXPECT_NEAR(kaiser[2], 1.0, test::kDoubleUlpsAbs);
  EXPECT_NEAR(kaiser[0], 1.0 / bessel_i0(8.6), test::kDoubleUlpsAbs);
  EXPECT_NEAR(bessel_i0(0.0), 1.0, test::kDoubleUlpsAbs);
  EXPECT_NEAR(bessel_i0(1.0), 1.2660658777520082, 1e-14);  // Abramowitz & Stegun table 9.8
  EXPECT_EQ(make_window({WindowKind::kHann}, 1), std::vector<double>{1.0});
  // scipy.signal.windows.flattop(3): ends a0 - a1 + a2 - a3 + a4, centre the sum of the a_k.
  const auto flattop = make_window({WindowKind::kFlattop}, 3);
  EXPECT_NEAR(flattop[0], 0.21557895 - 0.41663158 + 0.277263158 - 0.083578947 + 0.006947368, test::kDoubleUlpsAbs);
  EXPECT_NEAR(flattop[1], 1.000000003, test::kDoubleFormulaRel);
}

TEST(FirDesign, KaiserBetaFollowsKaisersFormula) {
  EXPECT_NEAR(kaiser_beta_for_attenuation(60), 0.1102 * (60 - 8.7), test::kDoubleFormulaRel);
  EXPECT_NEAR(kaiser_beta_for_attenuation(30), 0.5842 * std::pow(9.0, 0.4) + 0.07886 * 9.0, test::kDoubleFormulaRel);
  EXPECT_EQ(kaiser_beta_for_attenuation(20), 0.0);
}

TEST(FirDesign, RejectsBadParameters) {
  const WindowSpec w{WindowKind::kHamming};
  EXPECT_THROW(design_fir({FilterType::kLowpass, 0, 1000, 0, 48000, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kLowpass, 65537, 1000, 0, 48000, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kLowpass, 31, 0, 0, 48000, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kLowpass, 31, 24000, 0, 48000, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kLowpass, 31, 1000, 0, 0, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kHighpass, 32, 1000, 0, 48000, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kBandstop, 32, 1000, 2000, 48000, w}), std::invalid_argument);
  EXPECT_THROW(design_fir({FilterType::kBandpass, 31, 2000, 1000, 48000, w}), std::invalid_argument);
  EXPECT_THROW(make_window({WindowKind::kKaiser, -1.0}, 5), std::invalid_argument);
  EXPECT_THROW(make_window({WindowKind::kHann}, 0), std::invalid_argument);
  try {
    design_fir({FilterType::kHighpass, 32, 1000, 0, 48000, w});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("odd number of taps, got 32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

TEST(Crossover, BandsSumToTheDelayedInputBelowMinus90Db) {
  const double rate = 51200;
  const auto bands = design_crossover({500, 2000, 8000}, 255, rate, {WindowKind::kKaiser, 8.0});
  ASSERT_EQ(bands.size(), 4u);
  // In double: the sum is a delta at 127.
  for (size_t i = 0; i < 255; ++i) {
    double sum = 0;
    for (const auto& b : bands) sum += b[i];
    EXPECT_NEAR(sum, i == 127 ? 1.0 : 0.0, test::kDoubleFormulaRel) << i;
  }
  // In float32, through the streaming FIR bank: the band outputs sum to x delayed by 127 samples,
  // with an error energy below -90 dB of the signal's.
  std::vector<std::vector<float>> taps;
  for (const auto& b : bands) taps.emplace_back(b.begin(), b.end());
  const uint32_t n = 20000;
  std::mt19937 rng(8);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  FirBank bank(taps, 1, n);
  std::vector<float> y(4 * size_t(n));
  bank.process(x.data(), n, n, y.data(), n);
  double err = 0, sig = 0;
  for (uint32_t i = 127; i < n; ++i) {
    const double s = double(y[i]) + y[n + i] + y[2 * size_t(n) + i] + y[3 * size_t(n) + i];
    err += (s - x[i - 127]) * (s - x[i - 127]);
    sig += double(x[i - 127]) * x[i - 127];
  }
  const double db = 10 * std::log10(err / sig);
  EXPECT_LT(db, -90.0) << db;
  // And each band passes its own middle at unit gain once the filters are long enough for the
  // transition bands (~ 5 rate / taps wide for this Kaiser window) to clear the band centres.
  const auto sharp = design_crossover({500, 2000, 8000}, 2047, rate, {WindowKind::kKaiser, 8.0});
  EXPECT_NEAR(gain_at(sharp[0], 100 / rate), 1.0, 1e-3);
  EXPECT_NEAR(gain_at(sharp[1], 1000 / rate), 1.0, 1e-3);
  EXPECT_NEAR(gain_at(sharp[2], 4000 / rate), 1.0, 1e-3);
  EXPECT_NEAR(gain_at(sharp[3], 16000 / rate), 1.0, 1e-3);
  EXPECT_LT(gain_at(sharp[0], 2000 / rate), 1e-3);
  EXPECT_LT(gain_at(sharp[3], 2000 / rate), 1e-3);
}

TEST(Crossover, RejectsBadEdges) {
  const WindowSpec w{WindowKind::kHamming};
  EXPECT_THROW(design_crossover({}, 101, 48000, w), std::invalid_argument);
  EXPECT_THROW(design_crossover({1000, 1000}, 101, 48000, w), std::invalid_argument);
  EXPECT_THROW(design_crossover({1000}, 100, 48000, w), std::invalid_argument);
  EXPECT_THROW(design_crossover({30000}, 101, 48000, w), std::invalid_argument);
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

TEST(FirDesign, EveryTypeAndWindowEqualsScipyFirwin) {
  std::ifstream cases(std::string(VIGIL_TEST_DATA) + "/firwin_cases.txt");
  std::string name, type, window;
  size_t taps = 0;
  double f1 = 0, f2 = 0, rate = 0, beta = 0;
  int count = 0;
  while (cases >> name >> type >> taps >> f1 >> f2 >> rate >> window >> beta) {
    FirSpec spec{*parse_filter_type(type), taps, f1, f2, rate, {*parse_window_kind(window), beta}};
    const std::vector<double> h = design_fir(spec);
    const std::vector<double> ref = test::read_f64("firwin_" + name + ".bin");
    ASSERT_EQ(h.size(), ref.size()) << name;
    for (size_t i = 0; i < h.size(); ++i) ASSERT_NEAR(h[i], ref[i], test::kFirDesignAbs) << name << " tap " << i;
    ++count;
  }
  EXPECT_EQ(count, 6);
}

TEST(FirDesign, KaiserBetaFromAttenuationMatchesScipy) {
  // scipy.signal.kaiser_beta(80.0), as used by the lp_kaiser_atten80 case.
  EXPECT_NEAR(kaiser_beta_for_attenuation(80.0), 0.1102 * (80.0 - 8.7), test::kDoubleFormulaRel);
}

}  // namespace
}  // namespace vigil
