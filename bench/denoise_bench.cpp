// Wavelet denoising (VisuShrink: wavedec -> MAD sigma -> soft threshold -> waverec, db8,
// periodization, pywt's maximum level) on 2^16 .. 2^24 samples, single thread. The PyWavelets
// comparison runs in bench/denoise_pywt.py; bench/denoise_vs_pywt.sh runs both and prints ratios.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "dsp/wavelet_denoiser.hpp"

namespace {

void BM_Denoise(benchmark::State& state) {
  const auto n = size_t(state.range(0));
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = d(rng);
  vigil::DenoiseSpec spec;
  spec.wavelet = "db8";
  vigil::WaveletDenoiser den(spec, n);
  for (auto _ : state) {
    den.process(x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}

}  // namespace

BENCHMARK(BM_Denoise)->RangeMultiplier(4)->Range(1 << 16, 1 << 24)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
