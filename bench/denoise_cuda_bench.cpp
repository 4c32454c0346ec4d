// db8 VisuShrink denoising on the GPU, device-resident, N = 2^16 ... 2^26 (pywt's deepest level,
// soft, noise from the finest details): WaveletDenoiserCuda::process as issued on a stream. GPU
// time from CUDA events around each call after 5 warm-ups; google-benchmark reports the median.
// `denoise_cuda_bench --print-filters NAME` prints a wavelet's decomposition filters as JSON (for
// bench/denoise_torch.py, which does the same in PyTorch).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench/cuda_event_time.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/streaming_denoiser_cuda.hpp"
#include "cuda/wavelet_denoiser_cuda.hpp"

namespace {

using vigil::bench::time_on_stream;

// x on the device, and an output buffer of the same size.
void to_device(const std::vector<float>& x, float*& d_x, float*& d_y) {
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_y), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
}

void BM_DenoiseDb8(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const size_t n = size_t(1) << state.range(0);
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(std::sin(0.001 * double(i))) + 0.2f * d(rng);
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  vigil::DenoiseSpec spec;  // db8, deepest level, soft, finest
  vigil::cuda::WaveletDenoiserCuda den(spec, n, stream);
  float *d_x = nullptr, *d_y = nullptr;
  to_device(x, d_x, d_y);
  time_on_stream(state, stream, [&] { return den.process(d_x, d_y); });
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
  state.SetLabel("levels " + std::to_string(den.levels()));
  cudaFree(d_x);
  cudaFree(d_y);
  cudaStreamDestroy(stream);
}

BENCHMARK(BM_DenoiseDb8)->ArgName("log2n")->DenseRange(16, 26, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);

// S1's denoise stage (issue 9): db8, 4096-sample windows, one 65536-frame chunk per lane and call,
// device-resident; lanes = the rig's channels (800: S1 at 8 G samples/s).
void BM_StreamingDenoiseS1(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const uint32_t lanes = uint32_t(state.range(0)), frames = 65536;
  const size_t n = size_t(lanes) * frames;
  std::mt19937 rng(2);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = 0.01f * d(rng) + (i % 7919 < 300 ? 0.3f * float(std::sin(0.3 * double(i))) : 0.0f);
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  vigil::DenoiseSpec spec;  // db8, deepest level, soft, finest
  vigil::cuda::StreamingDenoiserCuda den(spec, 4096, lanes, frames, stream);
  float *d_x = nullptr, *d_y = nullptr;
  to_device(x, d_x, d_y);
  time_on_stream(state, stream, [&] { return den.process(d_x, frames, frames, d_y, frames); });
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
  cudaFree(d_x);
  cudaFree(d_y);
  cudaStreamDestroy(stream);
}

BENCHMARK(BM_StreamingDenoiseS1)->ArgName("lanes")->Arg(16)->Arg(64)->Arg(256)->Arg(800)->UseManualTime()->Unit(
    benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--print-filters") == 0) {
    vigil::DenoiseSpec spec;
    spec.wavelet = argv[2];
    const vigil::Wavelet w = vigil::denoise_wavelet(spec);
    std::printf("{\"dec_lo\": [");
    for (size_t k = 0; k < w.length(); ++k) std::printf("%s%.17g", k ? ", " : "", w.dec_lo[k]);
    std::printf("], \"dec_hi\": [");
    for (size_t k = 0; k < w.length(); ++k) std::printf("%s%.17g", k ? ", " : "", w.dec_hi[k]);
    std::printf("]}\n");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
