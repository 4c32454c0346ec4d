// Wavelet denoising (VisuShrink: wavedec -> MAD sigma -> soft threshold -> waverec, db8,
// periodization, pywt's maximum level) on 2^16 .. 2^24 samples, single thread. The PyWavelets
// comparison runs in bench/denoise_pywt.py; bench/denoise_vs_pywt.sh runs both and prints ratios.
// BM_StreamingDenoise: the streaming (windowed) form the pipeline stage uses; BM_MedianAbs its
// noise estimate per window.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "dsp/median_abs.hpp"
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

// As S1's wavelet_denoise stage runs it: windows of 4096 advancing by 2048, one lane, 65536-frame
// chunks (a window's noise estimate is the median of 2048 finest details).
void BM_StreamingDenoise(benchmark::State& state) {
  const uint32_t chunk = 65536;
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> x(chunk), y(chunk);
  for (auto& v : x) v = d(rng);
  vigil::DenoiseSpec spec;
  spec.wavelet = "db8";
  vigil::StreamingDenoiser den(spec, 4096, 1);
  for (auto _ : state) {
    den.process(x.data(), chunk, chunk, y.data(), chunk);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * chunk);
}

// The noise estimate of one such window: the median of |d| over its 2048 finest details (noise).
void BM_MedianAbs(benchmark::State& state) {
  const auto n = size_t(state.range(0));
  std::mt19937 rng(2);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng) * 0.01f;
  vigil::MedianAbs median(n);
  for (auto _ : state) benchmark::DoNotOptimize(median(x.data(), n));
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}

}  // namespace

BENCHMARK(BM_MedianAbs)->Arg(2048)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StreamingDenoise)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Denoise)->RangeMultiplier(4)->Range(1 << 16, 1 << 24)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
