// CUDA FIR bank throughput, device-resident: 16 channels x 2^20 samples per call, one band of M
// taps, partition B. GPU time from CUDA events around process() after warm-up. The CuPy
// comparison (cupyx.scipy.signal.oaconvolve on the same shapes) is bench/fir_cupy.py;
// bench/fir_cuda_vs_cupy.sh runs both and prints the ratio. BM_FirChunkCuda: one S1-shaped chunk
// (65536 frames a channel, one band) by the direct form (FirDirectCuda, no delay) against the FFT
// form as the fir_bank stage runs it (FirBankCuda at its preferred block, the chunk in one batch).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda_event_time.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/fir_bank_cuda.hpp"
#include "cuda/fir_direct_cuda.hpp"
#include "cuda/overlap_save_cuda.hpp"

namespace {

constexpr uint32_t kChannels = 16;
constexpr uint32_t kFrames = 1u << 20;

// The whole-signal benchmarks' input (16 ch x 2^20 random samples on the device), output, one
// random filter of m taps and a stream; freed when it goes.
struct WholeSignal {
  explicit WholeSignal(size_t m) : taps(m) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d;
    std::vector<float> x(size_t(kChannels) * kFrames);
    for (auto& v : taps) v = d(rng);
    for (auto& v : x) v = d(rng);
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    VIGIL_CUDA_CHECK(cudaStreamCreate(&stream));
  }
  ~WholeSignal() {
    cudaStreamDestroy(stream);
    cudaFree(d_in);
    cudaFree(d_out);
  }
  WholeSignal(const WholeSignal&) = delete;
  WholeSignal& operator=(const WholeSignal&) = delete;
  std::vector<float> taps;
  float *d_in = nullptr, *d_out = nullptr;
  cudaStream_t stream = nullptr;
};

void BM_FirBankCuda(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto m = size_t(state.range(0));
  const auto block = uint32_t(state.range(1));
  WholeSignal w(m);
  vigil::cuda::FirBankCuda bank({w.taps}, kChannels, block, w.stream);
  vigil::bench::time_on_stream(state, w.stream, [&] { return bank.process(w.d_in, kFrames, kFrames, w.d_out, kFrames); }, 3);
  state.SetItemsProcessed(int64_t(state.iterations()) * kChannels * kFrames);
}

// The batched single-block layout: FFT size N, hop N - M + 1, the whole 2^20 frames in one call.
// fuse: the multiply in cuFFT's store where it pays (CUDA 13), else a pass of its own (the CUDA 12
// path); the counters say which ran and what the constructor (plans, JIT link) took.
void overlap_save(benchmark::State& state, bool fuse) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto m = size_t(state.range(0));
  const auto fft = uint32_t(state.range(1));
  WholeSignal w(m);
  const auto t0 = std::chrono::steady_clock::now();
  vigil::cuda::OverlapSaveCuda os({w.taps}, kChannels, fft, kFrames, w.stream, fuse);
  const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  vigil::bench::time_on_stream(state, w.stream, [&] { return os.process(w.d_in, kFrames, kFrames, w.d_out, kFrames); }, 3);
  state.SetItemsProcessed(int64_t(state.iterations()) * kChannels * kFrames);
  state.counters["fused_multiply"] = os.fused_multiply() ? 1 : 0;
  state.counters["plan_ms"] = plan_ms;
}

void BM_OverlapSaveCuda(benchmark::State& state) { overlap_save(state, true); }
// The same with the multiply in a pass of its own, for the side-by-side.
void BM_OverlapSaveCudaSeparateMultiply(benchmark::State& state) { overlap_save(state, false); }

// The GPU's FP32 fused multiply-adds a second at its boost clock: SMs x FP32 lanes per SM x clock.
// Lanes per SM: 64 on sm_60/sm_70/sm_80 (P100, V100, A100), 128 on later ones (sm_86 to sm_90:
// GA10x, Orin, Ada, Hopper). 0 where the clock is not reported.
double fp32_fma_per_s() {
  int dev = 0, sms = 0, khz = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
    return 0;
  const int lanes = (major < 8 || (major == 8 && minor == 0)) ? 64 : 128;
  return double(sms) * lanes * double(khz) * 1e3;
}

// The direct form over the whole signal (16 ch x 2^20, one filter, device-resident), as the
// FFT layouts above: FirDirectCuda sized for the call (the tiled kernel up to 4096 taps, the
// split one beyond). Counters: the FMAs it does a second and the GPU's FP32 FMA peak, for the
// share of it the compute-bound direct form reaches. Args: taps.
void BM_FirDirectCuda(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto m = size_t(state.range(0));
  WholeSignal w(m);
  vigil::cuda::FirDirectCuda direct({w.taps}, kChannels, w.stream, kFrames);
  vigil::bench::time_on_stream(state, w.stream, [&] { return direct.process(w.d_in, kFrames, kFrames, w.d_out, kFrames); }, 3);
  state.SetItemsProcessed(int64_t(state.iterations()) * kChannels * kFrames);
  state.counters["fma_per_s"] = benchmark::Counter(double(m) * kChannels * kFrames, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["fp32_fma_peak_per_s"] = fp32_fma_per_s();
  state.SetLabel(direct.split() ? "split kernel" : "tiled kernel");
}

// Args: form (0 direct, 1 FFT), taps, channels.
void BM_FirChunkCuda(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  constexpr uint32_t kChunk = 65536;
  const bool fft = state.range(0) != 0;
  const auto m = size_t(state.range(1));
  const auto channels = uint32_t(state.range(2));
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> taps(m), x(size_t(channels) * kChunk);
  for (auto& v : taps) v = d(rng);
  for (auto& v : x) v = d(rng);
  float *d_in = nullptr, *d_out = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreate(&stream));
  std::unique_ptr<vigil::cuda::FirBankCuda> by_fft;
  std::unique_ptr<vigil::cuda::FirDirectCuda> direct;
  if (fft)
    by_fft = std::make_unique<vigil::cuda::FirBankCuda>(std::vector<std::vector<float>>{taps}, channels,
                                                        vigil::cuda::FirBankCuda::preferred_block(m), stream, kChunk);
  else
    direct = std::make_unique<vigil::cuda::FirDirectCuda>(std::vector<std::vector<float>>{taps}, channels, stream);
  auto run = [&] {
    return fft ? by_fft->process(d_in, kChunk, kChunk, d_out, kChunk) : direct->process(d_in, kChunk, kChunk, d_out, kChunk);
  };
  vigil::bench::time_on_stream(state, stream, run, 3);
  state.SetItemsProcessed(int64_t(state.iterations()) * channels * kChunk);
  cudaStreamDestroy(stream);
  cudaFree(d_in);
  cudaFree(d_out);
}

// BM_ShortChunkCuda: one chunk of a 4-band bank of long filters over short chunks (S3: 8191 taps,
// 256 frames, 2 channels), each form as the fir_bank stage runs it: one call captured as a CUDA
// graph and replayed (the direct form: FirDirectCuda sized for the chunk, the split kernel; the FFT
// form: FirBankCuda with blocks of the chunk, latency one chunk). Args: form (0 direct, 1 FFT),
// taps, channels, frames, memory (0: device; 1: page-locked host memory mapped into the GPU, read
// and written in place, as the stage's `memory: mapped`). Where the direct form wins, fir_bank's
// form: auto takes it (FirBankCudaStage::auto_direct).
void BM_ShortChunkCuda(benchmark::State& state) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  constexpr uint32_t kBands = 4;
  const bool fft = state.range(0) != 0;
  const auto m = size_t(state.range(1));
  const auto channels = uint32_t(state.range(2));
  const auto frames = uint32_t(state.range(3));
  const bool mapped = state.range(4) != 0;
  std::mt19937 rng(2);
  std::normal_distribution<float> d;
  std::vector<std::vector<float>> taps(kBands, std::vector<float>(m));
  for (auto& t : taps)
    for (auto& v : t) v = 0.01f * d(rng);
  std::vector<float> x(size_t(channels) * frames);
  for (auto& v : x) v = d(rng);
  float *d_in = nullptr, *d_out = nullptr, *h_in = nullptr, *h_out = nullptr;
  if (mapped) {
    VIGIL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h_in), x.size() * sizeof(float), cudaHostAllocMapped));
    VIGIL_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h_out), x.size() * kBands * sizeof(float), cudaHostAllocMapped));
    std::copy(x.begin(), x.end(), h_in);
    VIGIL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_in), h_in, 0));
    VIGIL_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_out), h_out, 0));
  } else {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in), x.size() * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), x.size() * kBands * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::unique_ptr<vigil::cuda::FirFilterCuda> bank;
  if (fft)
    bank = std::make_unique<vigil::cuda::FirBankCuda>(
        taps, channels, std::min(frames, vigil::cuda::FirBankCuda::preferred_block(m)), stream, frames);
  else
    bank = std::make_unique<vigil::cuda::FirDirectCuda>(taps, channels, stream, frames);
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  VIGIL_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  VIGIL_CUDA_CHECK(bank->process(d_in, frames, frames, d_out, frames));
  VIGIL_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  VIGIL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  vigil::bench::time_on_stream(state, stream, [&] { return cudaGraphLaunch(exec, stream); }, 20);
  state.SetItemsProcessed(int64_t(state.iterations()) * channels * frames);
  state.counters["direct_split"] = fft ? 0 : double(static_cast<vigil::cuda::FirDirectCuda&>(*bank).split());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  bank.reset();
  cudaStreamDestroy(stream);
  if (mapped) {
    cudaFreeHost(h_in);
    cudaFreeHost(h_out);
  } else {
    cudaFree(d_in);
    cudaFree(d_out);
  }
}

void short_chunk_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t frames : {256, 1024})
    for (int64_t m : {2048, 8191, 16384})
      for (int64_t channels : {2, 16, 64})
        for (int64_t mapped : {0, 1})
          for (int64_t form : {0, 1}) b->Args({form, m, channels, frames, mapped});
}

void chunk_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {32, 64, 255, 384, 512, 1024})
    for (int64_t channels : {16, 64, 256})
      for (int64_t form : {0, 1}) b->Args({form, m, channels});
}

void fft_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {64, 256, 1024, 8192})
    for (int64_t n = 256; n <= 65536; n *= 2)
      if (n > 2 * m) b->Args({m, n});
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {64, 256, 1024, 8192})
    for (int64_t block : {1024, 4096, 16384, 65536}) b->Args({m, block});
}

}  // namespace

BENCHMARK(BM_FirBankCuda)->Apply(shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OverlapSaveCuda)->Apply(fft_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OverlapSaveCudaSeparateMultiply)->Apply(fft_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FirDirectCuda)->Arg(64)->Arg(256)->Arg(1024)->Arg(8192)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FirChunkCuda)->Apply(chunk_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ShortChunkCuda)->Apply(short_chunk_shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
