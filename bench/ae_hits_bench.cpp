// AE hit engine throughput: CPU (one thread, all lanes in turn) and CUDA (device-resident input,
// CUDA events around enqueue after warm-up; second argument 0: one warp per lane, 1: each lane's
// chunk split into segments; not above 256 lanes), 65536-frame chunks of noise with Poisson bursts at 200 hits/s per
// lane, 2 MS/s. Lanes: 16 (one S1 rig) and 800 (fifty). BM_AeHitsCudaS1: S1's signal and settings
// (bench/scenarios/s1-ae.yaml: 10 MS/s, bursts of 0.05 at 300 kHz decaying over 100 us, HDT 800 us,
// PDT 200 us, HLT 1 ms, levels every 1 s), segmented; BM_AeHitsCpuS1 the same on the CPU (S1's 4
// channels on the two cores).
#include <benchmark/benchmark.h>

#include <vector>

#include "acquisition/synthetic_source.hpp"
#include "dsp/ae_hit_detector.hpp"
#if VIGIL_HAVE_CUDA
#include "cuda/ae_hit_detector_cuda.hpp"
#include "cuda/cuda_check.hpp"
#endif

namespace {

constexpr uint32_t kFrames = 65536;
constexpr double kRate = 2e6;
constexpr double kRateS1 = 10e6;

std::vector<float> lanes_of_signal(uint32_t lanes, bool s1 = false) {
  vigil::SyntheticSpec spec;
  spec.rate_hz = s1 ? kRateS1 : kRate;
  spec.channels = lanes;
  spec.format = vigil::SampleFormat::kFloat32;
  vigil::ChannelSignal s;
  s.noise_rms = 3e-4;
  s.bursts = s1 ? vigil::BurstSpec{0.05, 300e3, 20e-6, 100e-6, 200, {}} : vigil::BurstSpec{0.03, 150e3, 20e-6, 80e-6, 200, {}};
  spec.signals = {s};
  vigil::SyntheticSource src(spec);
  std::vector<float> x(size_t(lanes) * kFrames);
  for (uint32_t l = 0; l < lanes; ++l) src.generate_channel(l, kFrames, x.data() + size_t(l) * kFrames);
  return x;
}

vigil::AeSampleParams params(bool s1 = false) {
  vigil::AeHitSettings s;
  s.threshold_db = 45;
  s.full_scale_v = 10;
  s.preamp_gain_db = 40;
  s.level_interval_s = s1 ? 1.0 : 0.01;
  return vigil::ae_sample_params(s, s1 ? kRateS1 : kRate);
}

void run_cpu(benchmark::State& state, bool s1) {
  const auto lanes = uint32_t(state.range(0));
  const auto x = lanes_of_signal(lanes, s1);
  vigil::AeHitDetector d(params(s1), lanes);
  uint64_t first = 0, hits = 0;
  for (auto _ : state) {
    for (uint32_t l = 0; l < lanes; ++l)
      d.push(l, x.data() + size_t(l) * kFrames, kFrames, first, [&](const vigil::AeHit&) { ++hits; },
             [](const vigil::AeLevel&) {});
    first += kFrames;
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * lanes * kFrames);
  state.counters["hits"] = double(hits);
}
void BM_AeHitsCpu(benchmark::State& state) { run_cpu(state, false); }
void BM_AeHitsCpuS1(benchmark::State& state) { run_cpu(state, true); }
BENCHMARK(BM_AeHitsCpu)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AeHitsCpuS1)->Arg(4)->Unit(benchmark::kMicrosecond);

#if VIGIL_HAVE_CUDA
void run_cuda(benchmark::State& state, bool split, bool s1) {
  std::string why;
  if (!vigil::cuda::device_available(&why)) {
    state.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  const auto lanes = uint32_t(state.range(0));
  const auto x = lanes_of_signal(lanes, s1);
  float* d_x = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  VIGIL_CUDA_CHECK(cudaStreamCreate(&stream));
  vigil::cuda::AeHitDetectorCuda d(params(s1), lanes, 65536, false, false, split ? kFrames : 0);
  if (d.segmented(kFrames) != split) {
    state.SkipWithError("the segmented path does not take this call");
    return;
  }
  cudaEvent_t start, stop;
  VIGIL_CUDA_CHECK(cudaEventCreate(&start));
  VIGIL_CUDA_CHECK(cudaEventCreate(&stop));
  uint64_t first = 0;
  std::vector<vigil::AeHit> hits;
  std::vector<vigil::AeLevel> levels;
  for (int i = 0; i < 5; ++i, first += kFrames) {
    VIGIL_CUDA_CHECK(d.enqueue(d_x, kFrames, kFrames, first, stream));
    d.collect(hits, levels, stream);
  }
  for (auto _ : state) {
    VIGIL_CUDA_CHECK(cudaEventRecord(start, stream));
    VIGIL_CUDA_CHECK(d.enqueue(d_x, kFrames, kFrames, first, stream));
    VIGIL_CUDA_CHECK(cudaEventRecord(stop, stream));
    VIGIL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    VIGIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(double(ms) / 1e3);
    state.PauseTiming();
    d.collect(hits, levels, stream);
    state.ResumeTiming();
    first += kFrames;
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * lanes * kFrames);
  state.counters["hits"] = double(hits.size());
  const auto seg = d.segment_counts();  // per call
  const double calls = double(state.iterations() + 5);
  state.counters["seg_closed"] = double(seg.closed_form) / calls;
  state.counters["seg_taken"] = double(seg.taken) / calls;
  state.counters["seg_rerun"] = double(seg.run_again) / calls;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  cudaFree(d_x);
}

void BM_AeHitsCuda(benchmark::State& state) { run_cuda(state, state.range(1) != 0, false); }
void BM_AeHitsCudaS1(benchmark::State& state) { run_cuda(state, true, true); }
BENCHMARK(BM_AeHitsCudaS1)->Arg(16)->Arg(64)->Arg(256)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AeHitsCuda)
    ->Args({16, 0})
    ->Args({16, 1})
    ->Args({800, 0})
    ->UseManualTime()->Unit(benchmark::kMicrosecond);
#endif

}  // namespace

BENCHMARK_MAIN();
