#include "dsp/welch_psd.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../support/reference_data.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

TEST(WelchPsd, EqualsScipyWelch) {
  const auto x64 = test::read_f64("psd_x.bin");
  const std::vector<float> x(x64.begin(), x64.end());
  for (const auto& [name, kind, n] : std::vector<std::tuple<std::string, WindowKind, size_t>>{
           {"hann", WindowKind::kHann, 256}, {"hann", WindowKind::kHann, 1000},
           {"hamming", WindowKind::kHamming, 512}, {"blackman", WindowKind::kBlackman, 128}}) {
    WelchPsd welch(n, 1000.0, {kind});
    std::vector<double> psd(welch.bins(), -1.0);
    EXPECT_EQ(welch.compute(x.data(), x.size(), psd.data()), (x.size() - n) / (n / 2) + 1);
    const auto ref = test::read_f64("welch_" + name + "_" + std::to_string(n) + ".bin");
    ASSERT_EQ(ref.size(), psd.size());
    double max_ref = 0;
    for (double v : ref) max_ref = std::max(max_ref, v);
    // Relative to the largest bin (issue 3's 1e-5), and each bin to 1e-4 of itself or that.
    for (size_t k = 0; k < ref.size(); ++k)
      ASSERT_NEAR(psd[k], ref[k], test::kReferenceRelMax * max_ref) << name << " " << n << " bin " << k;
  }
}

TEST(WelchPsd, ParsevalAndBandEnergy) {
  // White noise of variance s^2: the PSD integrates to s^2 (one-sided density, V^2/Hz).
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 0.7f);
  std::vector<float> x(1 << 18);
  for (auto& v : x) v = d(rng);
  WelchPsd welch(1024, 2000.0);
  std::vector<double> psd(welch.bins());
  welch.compute(x.data(), x.size(), psd.data());
  EXPECT_NEAR(welch.band_energy(psd.data(), 0.0, 1000.0), 0.49, 0.49 * 0.01);
  EXPECT_NEAR(welch.band_energy(psd.data(), 0.0, 500.0), 0.245, 0.245 * 0.02);
  // A sine's power A^2/2 lands around its frequency.
  std::vector<float> s(1 << 16);
  for (size_t i = 0; i < s.size(); ++i) s[i] = float(2.0 * std::sin(2 * M_PI * 250.0 * double(i) / 2000.0));
  welch.compute(s.data(), s.size(), psd.data());
  EXPECT_NEAR(welch.band_energy(psd.data(), 240.0, 260.0), 2.0, 0.02);
}

TEST(WelchPsd, RejectsBadParameters) {
  EXPECT_THROW(WelchPsd(255, 1000.0), std::invalid_argument);
  EXPECT_THROW(WelchPsd(2, 1000.0), std::invalid_argument);
  EXPECT_THROW(WelchPsd(256, 0.0), std::invalid_argument);
  WelchPsd w(256, 1000.0);
  std::vector<float> x(100);
  std::vector<double> psd(w.bins());
  EXPECT_EQ(w.compute(x.data(), x.size(), psd.data()), 0u);  // shorter than a segment
}

}  // namespace
}  // namespace vigil
