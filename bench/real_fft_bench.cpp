// Vigil's RealFft (a complex FFT of n/2 points from FFTW plus its own split/merge pass) against
// FFTW's own real transforms (r2c, c2r) of the same size and planning, both forward and inverse:
// the choice dsp/real_fft.hpp made. Args: n, planning (0 estimate, 1 measure, 2 patient).
// Run: build/bench/real_fft_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <fftw3.h>

#include <algorithm>
#include <random>

#include "dsp/real_fft.hpp"

namespace {

unsigned fftw_flags(int64_t arg) { return arg == 2 ? FFTW_PATIENT : arg == 1 ? FFTW_MEASURE : FFTW_ESTIMATE; }
vigil::FftPlanning planning(int64_t arg) {
  return arg == 2   ? vigil::FftPlanning::kPatient
         : arg == 1 ? vigil::FftPlanning::kMeasure
                    : vigil::FftPlanning::kEstimate;
}

void fill(float* x, size_t n) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  for (size_t i = 0; i < n; ++i) x[i] = g(rng);
}

void BM_FftwR2c(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  vigil::FftwBuffer x = vigil::make_fftw_buffer(n), spec = vigil::make_fftw_buffer(n + 2);
  fftwf_plan p = fftwf_plan_dft_r2c_1d(int(n), x.get(), reinterpret_cast<fftwf_complex*>(spec.get()),
                                       fftw_flags(state.range(1)));
  fill(x.get(), n);
  for (auto _ : state) {
    fftwf_execute(p);
    benchmark::DoNotOptimize(spec.get());
  }
  fftwf_destroy_plan(p);
}

void BM_RealFftForward(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  vigil::RealFft fft(n, planning(state.range(1)));
  vigil::FftwBuffer x = vigil::make_fftw_buffer(n), spec = vigil::make_fftw_buffer(n + 2);
  fill(x.get(), n);
  for (auto _ : state) {
    fft.forward(x.get(), spec.get());
    benchmark::DoNotOptimize(spec.get());
  }
}

// The inverses overwrite their input: each iteration restores it (a copy of n + 2 floats, in both).
void BM_FftwC2r(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  vigil::FftwBuffer spec = vigil::make_fftw_buffer(n + 2), work = vigil::make_fftw_buffer(n + 2);
  vigil::FftwBuffer y = vigil::make_fftw_buffer(n);
  fftwf_plan p = fftwf_plan_dft_c2r_1d(int(n), reinterpret_cast<fftwf_complex*>(work.get()), y.get(),
                                       fftw_flags(state.range(1)));
  fill(spec.get(), n + 2);
  for (auto _ : state) {
    std::copy_n(spec.get(), n + 2, work.get());
    fftwf_execute(p);
    benchmark::DoNotOptimize(y.get());
  }
  fftwf_destroy_plan(p);
}

void BM_RealFftInverse(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  vigil::RealFft fft(n, planning(state.range(1)));
  vigil::FftwBuffer spec = vigil::make_fftw_buffer(n + 2), work = vigil::make_fftw_buffer(n + 2);
  vigil::FftwBuffer y = vigil::make_fftw_buffer(n);
  fill(spec.get(), n + 2);
  for (auto _ : state) {
    std::copy_n(spec.get(), n + 2, work.get());
    fft.inverse(work.get(), y.get());
    benchmark::DoNotOptimize(y.get());
  }
}

// S3's sizes (512, 2048), S1's (2048), S2's (16384) and a large one; estimate and measure plans.
void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {512, 2048, 16384, 65536})
    for (int64_t p : {0, 1}) b->Args({n, p});
}
BENCHMARK(BM_FftwR2c)->Apply(sizes);
BENCHMARK(BM_RealFftForward)->Apply(sizes);
BENCHMARK(BM_FftwC2r)->Apply(sizes);
BENCHMARK(BM_RealFftInverse)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
