// FFTW wisdom in a file (a restart plans at once) and patient planning: the wisdom written is the
// wisdom read back (a plan that may only use wisdom then succeeds), a missing or foreign file is
// refused with the reason and changes nothing, and an unwritable path is reported. Patient plans
// transform as the estimated ones do.
#include "dsp/real_fft.hpp"

#include <gtest/gtest.h>

#include <fftw3.h>

#include <cmath>
#include <fstream>
#include <random>
#include <vector>

#include "../support/temp_dir.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

// Whether FFTW can plan a measured real FFT of size n from wisdom alone (no timing allowed): the
// forward complex FFT of n/2 points RealFft plans for it.
bool planned_from_wisdom(int n) {
  FftwBuffer in = make_fftw_buffer(size_t(n)), out = make_fftw_buffer(size_t(n) + 2);
  fftwf_plan p = fftwf_plan_dft_1d(n / 2, reinterpret_cast<fftwf_complex*>(in.get()),
                                   reinterpret_cast<fftwf_complex*>(out.get()), FFTW_FORWARD,
                                   FFTW_MEASURE | FFTW_WISDOM_ONLY);
  if (p) fftwf_destroy_plan(p);
  return p != nullptr;
}

TEST(FftWisdom, WhatIsSavedLoadsBackAndPlansWithoutMeasuring) {
  test::TempDir dir("wisdom");
  const std::string path = dir.file("fftwf.wisdom");
  { RealFft fft(4096, FftPlanning::kMeasure); }
  std::string why;
  ASSERT_TRUE(fft_export_wisdom(path, why)) << why;
  fftwf_forget_wisdom();
  EXPECT_FALSE(planned_from_wisdom(4096)) << "wisdom survived forgetting: the test proves nothing";
  ASSERT_TRUE(fft_import_wisdom(path, why)) << why;
  EXPECT_TRUE(planned_from_wisdom(4096));
  std::ifstream tmp(path + ".tmp");
  EXPECT_FALSE(tmp.good()) << "the temporary file was left behind";
}

TEST(FftWisdom, MissingForeignAndUnwritableFilesAreReported) {
  test::TempDir dir("wisdom-bad");
  std::string why;
  EXPECT_FALSE(fft_import_wisdom(dir.file("none"), why));
  EXPECT_NE(why.find("none: No such file"), std::string::npos) << why;
  const std::string junk = dir.write("junk", "(this is not wisdom");
  EXPECT_FALSE(fft_import_wisdom(junk, why));
  EXPECT_NE(why.find("not FFTW single-precision wisdom"), std::string::npos) << why;
  EXPECT_FALSE(fft_export_wisdom(dir.file("no/such/dir/w"), why));
  EXPECT_NE(why.find("no/such/dir/w.tmp"), std::string::npos) << why;
}

TEST(FftWisdom, PatientPlansTransformLikeEstimatedOnes) {
  const size_t n = 256;  // small: patient planning takes milliseconds
  RealFft patient(n, FftPlanning::kPatient), estimate(n, FftPlanning::kEstimate);
  FftwBuffer x = make_fftw_buffer(n), a = make_fftw_buffer(n + 2), b = make_fftw_buffer(n + 2);
  FftwBuffer ya = make_fftw_buffer(n), yb = make_fftw_buffer(n);
  std::mt19937 rng(3);
  std::normal_distribution<float> g;
  for (size_t i = 0; i < n; ++i) x[i] = g(rng);
  patient.forward(x.get(), a.get());
  estimate.forward(x.get(), b.get());
  for (size_t k = 0; k < n + 2; ++k) EXPECT_NEAR(a[k], b[k], test::kFloatFftSampleAbs * std::sqrt(double(n))) << k;
  patient.inverse(a.get(), ya.get());
  estimate.inverse(b.get(), yb.get());
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(ya[i] / float(n), x[i], test::kFloatSampleAbs) << i;
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(yb[i] / float(n), x[i], test::kFloatSampleAbs) << i;
}

}  // namespace
}  // namespace vigil
