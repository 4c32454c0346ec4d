#include "dsp/convolution.hpp"

#include <gtest/gtest.h>

#include "../support/signals.hpp"
#include "../support/tolerances.hpp"

#include <cmath>
#include <random>

namespace vigil {
namespace {

using test::max_abs;
using test::randn;
using test::rel_l2;


// numpy.convolve's definition, in double: the independent reference.
std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& h) {
  std::vector<double> y(x.size() + h.size() - 1, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t k = 0; k < h.size(); ++k) y[i + k] += double(x[i]) * h[k];
  return y;
}

TEST(Convolution, FullOutputEqualsTheDefinitionForBothMethodsAndShapes) {
  for (const auto& [n, m] : std::vector<std::pair<size_t, size_t>>{
           {1, 1}, {5, 3}, {3, 5}, {100, 48}, {100, 49}, {1000, 300}, {300, 1000}, {70000, 1500}}) {
    const auto x = randn(n, uint32_t(n)), h = randn(m, uint32_t(m + 1));
    const auto ref = reference(x, h);
    double max_ref = 1.0;
    for (double v : ref) max_ref = std::max(max_ref, std::fabs(v));
    for (ConvolutionMethod method : {ConvolutionMethod::kAuto, ConvolutionMethod::kDirect, ConvolutionMethod::kFft}) {
      std::vector<float> y(n + m - 1, -999.0f);
      convolve_full(x.data(), n, h.data(), m, y.data(), method);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], ref[i], test::kReferenceRelMax * max_ref) << n << "x" << m << " method " << int(method) << " index " << i;
    }
  }
  EXPECT_EQ(choose_convolution_method(1000, 48), ConvolutionMethod::kDirect);
  EXPECT_EQ(choose_convolution_method(49, 1000), ConvolutionMethod::kFft);
}

TEST(Convolution, MatchedFilterPeaksWhereTheTemplateSits) {
  // A chirp template buried in noise at sample 5000: the correlator's output peaks when its last
  // sample has arrived (index 5000 + M - 1, plus the engine's latency).
  const size_t m = 256;
  std::vector<float> tmpl(m);
  for (size_t i = 0; i < m; ++i) tmpl[i] = float(std::sin(0.001 * double(i * i)));
  std::vector<float> x = randn(20000, 3);
  for (auto& v : x) v *= 0.5f;
  for (size_t i = 0; i < m; ++i) x[5000 + i] += tmpl[i];
  StreamingCorrelator corr(tmpl, 1, 1000, 1000);
  std::vector<float> y(x.size());
  for (size_t at = 0; at < x.size(); at += 1000) corr.process(x.data() + at, 1000, 1000, y.data() + at, 1000);
  const size_t peak = size_t(std::max_element(y.begin(), y.end()) - y.begin());
  EXPECT_EQ(peak, 5000 + m - 1 + corr.latency_frames());
  double energy = 0;
  for (float v : tmpl) energy += double(v) * v;
  EXPECT_NEAR(y[peak], energy, 0.25 * energy);  // template energy plus noise
}

TEST(Convolution, RejectsEmptyInputs) {
  float v = 1.0f, y = 0.0f;
  EXPECT_THROW(convolve_full(&v, 0, &v, 1, &y), std::invalid_argument);
  EXPECT_THROW(convolve_full(&v, 1, &v, 0, &y), std::invalid_argument);
  EXPECT_THROW(StreamingCorrelator({}, 1, 16, 16), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
