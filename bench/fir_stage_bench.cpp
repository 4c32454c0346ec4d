// The fir_bank stage as the pipeline runs it, host memory in -> host memory out, per chunk:
// the CPU stage (StreamingFirBank, one thread) against the CUDA stage with copy staging
// (page-locked, cudaMemcpy2DAsync) and with mapped (zero-copy) staging. 8 channels, 4 bands of
// 1023 taps, chunk sizes 256..65536 frames. Wall time per process() call (the pipeline's cost,
// synchronised) after warm-up; gpu_us_p50 is the stage's own CUDA-event time (upload, filter,
// download). Answers `pipeline.memory`: which staging wins at which chunk size.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <random>
#include <vector>

#include "stages/fir_bank_stage.hpp"
#if VIGIL_HAVE_CUDA
#include "cuda/cuda_check.hpp"
#include "stages/fir_bank_cuda_stage.hpp"
#endif

namespace {

constexpr uint32_t kChannels = 8;

vigil::FirBankSettings settings() {
  vigil::FirBankSettings s;
  s.taps = 1023;
  s.bands = {{"b0", vigil::FilterType::kLowpass, 2000, 0},
             {"b1", vigil::FilterType::kBandpass, 2000, 6000},
             {"b2", vigil::FilterType::kBandpass, 6000, 12000},
             {"b3", vigil::FilterType::kHighpass, 12000, 0}};
  return s;
}

void run(benchmark::State& state, vigil::Stage& stage) {
  const auto frames = uint32_t(state.range(0));
  vigil::StreamFormat in;
  in.rate_hz = 51200;
  in.channels = kChannels;
  in.bands = 1;
  stage.prepare(in, frames);
  std::vector<float> x(size_t(kChannels) * frames), y(size_t(4) * kChannels * frames);
  std::mt19937 rng(1);
  std::normal_distribution<float> n;
  for (float& v : x) v = n(rng);
  vigil::Block bin{x.data(), frames, frames, kChannels, 1}, bout{y.data(), frames, 0, kChannels, 4};
  vigil::Exec exec;
  for (int i = 0; i < 20; ++i) stage.process(bin, bout, exec);  // warm-up
  for (auto _ : state) {
    stage.process(bin, bout, exec);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kChannels * frames);
  nlohmann::json st;
  stage.add_status(st);
  if (st.contains("gpu_us")) state.counters["gpu_us_p50"] = st["gpu_us"]["p50"].get<double>();
}

void BM_FirStageCpu(benchmark::State& state) {
  vigil::FirBankStage stage(settings());
  run(state, stage);
}
BENCHMARK(BM_FirStageCpu)->RangeMultiplier(4)->Range(256, 65536)->Unit(benchmark::kMicrosecond)->UseRealTime();

#if VIGIL_HAVE_CUDA
void BM_FirStageCuda(benchmark::State& state) {
  if (!vigil::cuda::device_available()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  vigil::FirBankCudaStage stage(settings(), 0, {state.range(1) != 0, 0});
  run(state, stage);
  state.SetLabel(state.range(1) ? "mapped" : "copy");
}
BENCHMARK(BM_FirStageCuda)
    ->ArgsProduct({{256, 1024, 4096, 16384, 65536}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
#endif

}  // namespace

BENCHMARK_MAIN();
