// Sample conversion (int16 interleaved -> planar float): the CPU function against the CUDA
// kernel in the same process. GPU times come from CUDA events around the launch alone (kernel)
// and around copy-in + kernel + copy-out from pinned memory (round trip), after warm-up.
// Run with --benchmark_repetitions=N --benchmark_report_aggregates_only=true for medians.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "dsp/sample_convert.hpp"
#if VIGIL_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "bench/cuda_event_time.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/sample_convert_cuda.hpp"
#endif

namespace {

std::vector<int16_t> random_int16(size_t n) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(-32768, 32767);
  std::vector<int16_t> v(n);
  for (auto& x : v) x = int16_t(d(rng));
  return v;
}

void BM_ConvertCpu(benchmark::State& state) {
  const auto frames = uint32_t(state.range(0)), channels = uint32_t(state.range(1));
  const auto in = random_int16(size_t(frames) * channels);
  std::vector<float> out(size_t(frames) * channels);
  std::vector<vigil::ConvertCounts> counts(channels);
  for (auto _ : state) {
    vigil::convert_to_planar(in.data(), vigil::SampleFormat::kInt16, frames, channels, 1.0f / 32768, out.data(),
                             frames, counts.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * frames * channels);
}

#if VIGIL_HAVE_CUDA
void BM_ConvertCudaKernel(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto frames = uint32_t(state.range(0)), channels = uint32_t(state.range(1));
  const auto in = random_int16(size_t(frames) * channels);
  vigil::cuda::SampleConvertCuda conv(frames, channels);
  VIGIL_CUDA_CHECK(cudaMemcpy(conv.device_input(), in.data(), in.size() * 2, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreate(&stream));
  vigil::bench::time_on_stream(state, stream, [&] {
    return conv.enqueue(conv.device_input(), vigil::SampleFormat::kInt16, frames, 1.0f / 32768, conv.device_output(),
                        frames, stream);
  }, 20);
  state.SetItemsProcessed(int64_t(state.iterations()) * frames * channels);
  cudaStreamDestroy(stream);
}

void BM_ConvertCudaRoundTrip(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto frames = uint32_t(state.range(0)), channels = uint32_t(state.range(1));
  const size_t n = size_t(frames) * channels;
  const auto in = random_int16(n);
  int16_t* h_in = nullptr;
  float* h_out = nullptr;
  VIGIL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h_in), n * 2, cudaHostAllocDefault));
  VIGIL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h_out), n * 4, cudaHostAllocDefault));
  std::copy(in.begin(), in.end(), h_in);
  vigil::cuda::SampleConvertCuda conv(frames, channels);
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreate(&stream));
  vigil::bench::time_on_stream(state, stream, [&] {
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(conv.device_input(), h_in, n * 2, cudaMemcpyHostToDevice, stream));
    VIGIL_CUDA_RETURN_IF_ERROR(conv.enqueue(conv.device_input(), vigil::SampleFormat::kInt16, frames, 1.0f / 32768,
                                            conv.device_output(), frames, stream));
    return cudaMemcpyAsync(h_out, conv.device_output(), n * 4, cudaMemcpyDeviceToHost, stream);
  }, 20);
  state.SetItemsProcessed(int64_t(state.iterations()) * frames * channels);
  cudaFreeHost(h_in);
  cudaFreeHost(h_out);
  cudaStreamDestroy(stream);
}
#endif

// (frames, channels): the default chunk (1024 x 4), a large chunk (16384 x 8), a bulk block (2^20 x 32),
// S2's chunk (1024 x 64), S1's (65536 x 16), a stereo chunk (1024 x 2).
void sizes(benchmark::internal::Benchmark* b) {
  b->Args({1024, 4})->Args({16384, 8})->Args({1 << 20, 32})->Args({1024, 64})->Args({65536, 16})->Args({1024, 2});
}

}  // namespace

BENCHMARK(BM_ConvertCpu)->Apply(sizes);
#if VIGIL_HAVE_CUDA
BENCHMARK(BM_ConvertCudaKernel)->Apply(sizes)->UseManualTime();
BENCHMARK(BM_ConvertCudaRoundTrip)->Apply(sizes)->UseManualTime();
#endif

BENCHMARK_MAIN();
