// SpectrumCuda against its CPU twins: windowed magnitude spectra against FFTW (RealFft) with the
// same periodic window, and the Welch PSD against WelchPsd and SciPy's reference outputs. Fresh
// random inputs, outputs poisoned with NaN before each run, sizes from the smallest to the largest
// supported, row counts below the planned batch, segment counts beyond one FFT batch.
#include "cuda/spectrum_cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../support/reference_data.hpp"
#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/tolerances.hpp"
#include "cuda/cuda_check.hpp"
#include "dsp/real_fft.hpp"
#include "dsp/welch_psd.hpp"

namespace vigil {
namespace {

using test::randn;

template <typename T>
double rel_l2(const std::vector<T>& got, const std::vector<T>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - double(want[i])) * (double(got[i]) - double(want[i]));
    den += double(want[i]) * double(want[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// |rfft(w * x)| on the CPU with FFTW, w the periodic window of n points.
std::vector<float> cpu_magnitudes(const std::vector<float>& x, uint32_t n, uint32_t rows, WindowSpec window) {
  const std::vector<double> w = make_window(window, size_t(n) + 1);
  RealFft fft(n);
  FftwBuffer in = make_fftw_buffer(n), spec = make_fftw_buffer(2 * (n / 2 + 1));
  std::vector<float> mag;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t i = 0; i < n; ++i) in[i] = x[size_t(r) * n + i] * float(w[i]);
    fft.forward(in.get(), spec.get());
    for (uint32_t k = 0; k <= n / 2; ++k) mag.push_back(float(std::hypot(double(spec[2 * k]), double(spec[2 * k + 1]))));
  }
  return mag;
}

TEST(SpectrumCuda, MagnitudesEqualFftwForEverySizeAndRowCount) {
  VIGIL_SKIP_WITHOUT_GPU();
  struct Case {
    uint32_t n, max_rows, rows;
    WindowKind window;
  };
  // 4: the smallest; 6 and 1000: not powers of two; 1024 x 64 and 65536 x 1: the benchmark's
  // shapes; 2^22: the largest; rows below the planned batch.
  for (const Case c : {Case{4, 3, 3, WindowKind::kHann}, Case{6, 5, 2, WindowKind::kHamming},
                       Case{1000, 7, 7, WindowKind::kBlackman}, Case{1024, 64, 64, WindowKind::kHann},
                       Case{1024, 64, 13, WindowKind::kHann}, Case{65536, 1, 1, WindowKind::kHann},
                       Case{1u << 22, 1, 1, WindowKind::kHann}}) {
    const std::vector<float> x = randn(size_t(c.n) * c.rows, c.n + c.rows);
    cuda::SpectrumCuda gpu(c.n, c.max_rows, 1000.0, {c.window});
    test::DeviceArray<float> d_x(x.size()), d_mag(size_t(gpu.bins()) * c.rows);
    d_x.put(x);
    ASSERT_EQ(gpu.magnitude(d_x.p, c.rows, d_mag.p), cudaSuccess);
    const std::vector<float> got = d_mag.get();
    test::expect_all_finite(got, "n " + std::to_string(c.n));
    // float32 FFTs on both sides, each with error ~ eps * log2(n): 1e-5 holds to 2^22.
    EXPECT_LE(rel_l2(got, cpu_magnitudes(x, c.n, c.rows, {c.window})), test::kGpuVsCpuRelL2) << "n " << c.n << " rows " << c.rows;
  }
}

TEST(SpectrumCuda, WelchEqualsTheCpuTwinAcrossBatches) {
  VIGIL_SKIP_WITHOUT_GPU();
  struct Case {
    uint32_t nperseg, max_rows;
    size_t n;
    WindowKind window;
  };
  // 10 segments through batches of 3 (3 + 3 + 3 + 1); a tail shorter than a step; exactly one
  // segment; n < nperseg (no segment: zeros); many segments in one batch.
  for (const Case c : {Case{256, 3, 256 * 11 / 2 + 77, WindowKind::kHann}, Case{1000, 64, 1000, WindowKind::kHamming},
                       Case{1000, 64, 999, WindowKind::kHann}, Case{4096, 512, 1 << 20, WindowKind::kBlackman},
                       Case{4, 2, 101, WindowKind::kHann}}) {
    std::vector<float> x = randn(c.n, uint32_t(c.n) + c.nperseg);
    for (size_t i = 0; i < x.size(); ++i) x[i] += 0.3f + float(std::sin(0.01 * double(i)));  // a mean to remove
    WelchPsd cpu(c.nperseg, 2000.0, {c.window});
    std::vector<double> want(cpu.bins());
    const size_t want_segments = cpu.compute(x.data(), x.size(), want.data());
    cuda::SpectrumCuda gpu(c.nperseg, c.max_rows, 2000.0, {c.window});
    test::DeviceArray<float> d_x(x.size());
    test::DeviceArray<double> d_psd(gpu.bins());
    d_x.put(x);
    size_t segments = 999;
    ASSERT_EQ(gpu.welch(d_x.p, x.size(), d_psd.p, &segments), cudaSuccess);
    EXPECT_EQ(segments, want_segments) << c.nperseg << " " << c.n;
    const std::vector<double> got = d_psd.get();
    test::expect_all_finite(got, "psd");
    if (want_segments == 0) {
      for (double v : got) EXPECT_EQ(v, 0.0);
      continue;
    }
    EXPECT_LE(rel_l2(got, want), test::kGpuVsCpuRelL2) << c.nperseg << " " << c.n;
    // Band energies from the GPU's PSD, as the CPU twin computes them from its own.
    const double bin_hz = gpu.bin_hz(1);
    for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{{0, 1000}, {100, 300}, {250, 250}})
      EXPECT_NEAR(psd_band_energy(got.data(), got.size(), bin_hz, lo, hi), cpu.band_energy(want.data(), lo, hi),
                  1e-5 * cpu.band_energy(want.data(), 0, 1000));
  }
}

TEST(SpectrumCuda, WelchEqualsScipy) {
  VIGIL_SKIP_WITHOUT_GPU();
  const auto x64 = test::read_f64("psd_x.bin");
  const std::vector<float> x(x64.begin(), x64.end());
  test::DeviceArray<float> d_x(x.size());
  d_x.put(x);
  for (const auto& [name, kind, n] : std::vector<std::tuple<std::string, WindowKind, uint32_t>>{
           {"hann", WindowKind::kHann, 256}, {"hann", WindowKind::kHann, 1000},
           {"hamming", WindowKind::kHamming, 512}, {"blackman", WindowKind::kBlackman, 128}}) {
    cuda::SpectrumCuda gpu(n, 8, 1000.0, {kind});
    test::DeviceArray<double> d_psd(gpu.bins());
    size_t segments = 0;
    ASSERT_EQ(gpu.welch(d_x.p, x.size(), d_psd.p, &segments), cudaSuccess);
    const std::vector<double> psd = d_psd.get();
    const auto ref = test::read_f64("welch_" + name + "_" + std::to_string(n) + ".bin");
    ASSERT_EQ(ref.size(), psd.size());
    double max_ref = 0;
    for (double v : ref) max_ref = std::max(max_ref, v);
    for (size_t k = 0; k < ref.size(); ++k) ASSERT_NEAR(psd[k], ref[k], test::kReferenceRelMax * max_ref) << name << " " << n << " bin " << k;
  }
}

TEST(SpectrumCuda, RejectsBadParameters) {
  EXPECT_THROW(cuda::SpectrumCuda(3, 1, 1000.0), std::invalid_argument);
  EXPECT_THROW(cuda::SpectrumCuda(1024, 0, 1000.0), std::invalid_argument);
  EXPECT_THROW(cuda::SpectrumCuda(1u << 22, 65536, 1000.0), std::invalid_argument);
  EXPECT_THROW(cuda::SpectrumCuda(1024, 4, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
