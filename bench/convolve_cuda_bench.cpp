// Full convolution on the GPU, device-resident, N in {1e4, 1e5, 1e6} x M in {8, 64, 512}:
// the 2010 paper's one-output-per-thread kernel (the comparison), Vigil's tiled direct kernel
// (shared-memory tiles, register-blocked outputs), and FFT overlap-save (OverlapSaveCuda, the
// whole signal in one call). GPU time from CUDA events around the launch after 3 warm-up calls;
// with batch > 1, around that many launches back to back, reported per launch (the events' own
// cost, ~6 us, otherwise hides what a small launch takes when calls follow one another).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "cuda/convolve_direct.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/overlap_save_cuda.hpp"
#include "dsp/partitioned_fir_bank.hpp"

namespace {

enum Kind { kNaive = 0, kTiled = 1, kFft = 2 };

void BM_ConvolveFull(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto n = size_t(state.range(0));
  const auto m = uint32_t(state.range(1));
  const auto kind = Kind(state.range(2));
  const auto batch = int(state.range(3));
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  const size_t n_out = n + m - 1;
  std::vector<float> x(n_out + 65536, 0.0f), h(m);  // room for the FFT path's flush
  for (size_t i = 0; i < n; ++i) x[i] = d(rng);
  for (auto& v : h) v = d(rng);
  float *d_x = nullptr, *d_h = nullptr, *d_y = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_h), m * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_y), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_h, h.data(), m * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreate(&stream));
  std::unique_ptr<vigil::cuda::OverlapSaveCuda> os;
  size_t fft_frames = 0;
  if (kind == kFft) {
    const uint32_t fft = std::max<uint32_t>(32, vigil::PartitionedFirBank::best_fft_size(m));
    os = std::make_unique<vigil::cuda::OverlapSaveCuda>(std::vector<std::vector<float>>{h}, 1, fft,
                                                        uint32_t(n_out + 65536));
    fft_frames = n_out + os->latency_frames();  // the full result, flushed
    state.SetLabel("FFT " + std::to_string(fft));
  }
  auto launch = [&] {
    switch (kind) {
      case kNaive: return vigil::cuda::launch_convolve_full_naive(d_x, n, d_h, m, d_y, stream);
      case kTiled: return vigil::cuda::launch_convolve_full_tiled(d_x, n, d_h, m, d_y, stream);
      case kFft: return os->process(d_x, x.size(), uint32_t(fft_frames), d_y, x.size());
    }
    return cudaErrorInvalidValue;
  };
  cudaEvent_t start, stop;
  VIGIL_CUDA_CHECK(cudaEventCreate(&start));
  VIGIL_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) VIGIL_CUDA_CHECK(launch());
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    VIGIL_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int b = 0; b < batch; ++b) VIGIL_CUDA_CHECK(launch());
    VIGIL_CUDA_CHECK(cudaEventRecord(stop, stream));
    VIGIL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    VIGIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(double(ms) / 1e3 / batch);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n_out));
  state.counters["GMAC_per_s"] = benchmark::Counter(double(n) * m * double(state.iterations()) / 1e9,
                                                    benchmark::Counter::kIsRate);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  os.reset();
  cudaStreamDestroy(stream);
  cudaFree(d_x);
  cudaFree(d_h);
  cudaFree(d_y);
}
BENCHMARK(BM_ConvolveFull)
    ->ArgNames({"N", "M", "kind", "batch"})
    ->ArgsProduct({{10000, 100000, 1000000}, {8, 64, 512}, {kNaive, kTiled, kFft}, {1}})
    ->ArgsProduct({{10000, 100000}, {512}, {kNaive, kTiled}, {32}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
