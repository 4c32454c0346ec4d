// The spectrum of issue 8's comparison: Hann window -> real FFT -> magnitude, device-resident,
// 64 x 1024 and 1 x 65536 points (the 2012 FFT paper's sizes), as SpectrumCuda::magnitude issues
// it on a stream (three launches) and the same captured once as a CUDA Graph and replayed. Plus
// the Welch PSD of 2^20 samples (nperseg 4096, 511 segments). GPU time from CUDA events around
// each call after 10 warm-up calls; google-benchmark reports the median of the repetitions.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "bench/cuda_event_time.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/spectrum_cuda.hpp"

namespace {

enum Mode { kStream = 0, kGraph = 1, kWelch = 2 };

void BM_Spectrum(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto rows = uint32_t(state.range(0)), n = uint32_t(state.range(1));
  const auto mode = Mode(state.range(2));
  const size_t samples = mode == kWelch ? size_t(1) << 20 : size_t(rows) * n;
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> x(samples);
  for (auto& v : x) v = d(rng);
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const uint32_t segments = uint32_t((samples - n) / (n / 2) + 1);
  vigil::cuda::SpectrumCuda spectrum(n, mode == kWelch ? segments : rows, 51200.0, {vigil::WindowKind::kHann}, stream);
  float *d_x = nullptr, *d_mag = nullptr;
  double* d_psd = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), samples * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_mag), size_t(rows) * spectrum.bins() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_psd), spectrum.bins() * sizeof(double)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), samples * sizeof(float), cudaMemcpyHostToDevice));
  size_t got_segments = 0;
  auto call = [&] {
    return mode == kWelch ? spectrum.welch(d_x, samples, d_psd, &got_segments) : spectrum.magnitude(d_x, rows, d_mag);
  };
  cudaGraphExec_t graph_exec = nullptr;
  if (mode == kGraph) {  // one call's launches captured once, replayed as one
    cudaGraph_t graph;
    VIGIL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const cudaError_t e = call();
    VIGIL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    VIGIL_CUDA_CHECK(e);
    VIGIL_CUDA_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
    cudaGraphDestroy(graph);
  }
  auto run = [&] { return graph_exec ? cudaGraphLaunch(graph_exec, stream) : call(); };
  vigil::bench::time_on_stream(state, stream, run, 10);
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(samples));
  state.SetLabel(mode == kStream ? "stream" : mode == kGraph ? "graph" : "welch " + std::to_string(segments) + " segments");
  if (graph_exec) cudaGraphExecDestroy(graph_exec);
  cudaFree(d_x);
  cudaFree(d_mag);
  cudaFree(d_psd);
  cudaStreamDestroy(stream);
}

BENCHMARK(BM_Spectrum)
    ->ArgNames({"rows", "n", "mode"})
    ->Args({64, 1024, kStream})
    ->Args({64, 1024, kGraph})
    ->Args({1, 65536, kStream})
    ->Args({1, 65536, kGraph})
    ->Args({1, 4096, kWelch})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
