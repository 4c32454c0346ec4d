// The CPU FIR banks of the issue-9 scenarios, one process() call per chunk, single thread unless
// stated: S3's crossover (2 channels, 4 bands x 8191 taps, 256-frame chunks: 32 uniform
// partitions of 256) and S2's vibration bank (64 channels, 4 x 8191 taps, 1024-frame chunks,
// latency limit 8192: one 16384-point FFT block), both also as the fir_bank stage builds them
// (StreamingFirBank: S3 in non-uniform partitions) split over a worker pool.
// Time: per chunk; x_real_time: seconds of signal per second (S3 at 48 kHz, S2 at 51.2 kHz).
// Run: build/bench/fir_bank_scenarios_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "core/block_worker.hpp"
#include "dsp/fir_design.hpp"
#include "dsp/nonuniform_fir_bank.hpp"
#include "dsp/partitioned_fir_bank.hpp"
#include "dsp/streaming_fir_bank.hpp"
#include "core/worker_pool.hpp"

namespace {

std::vector<std::vector<float>> random_taps(uint32_t bands, size_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 0.01f);
  std::vector<std::vector<float>> taps(bands, std::vector<float>(n));
  for (auto& t : taps)
    for (auto& v : t) v = d(rng);
  return taps;
}

template <typename Bank>
void run(benchmark::State& state, Bank& bank, uint32_t channels, uint32_t chunk, double rate_hz) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  std::vector<float> in(size_t(channels) * chunk), out(4 * size_t(channels) * chunk);
  for (auto& v : in) v = d(rng);
  for (int i = 0; i < 64; ++i) bank.process(in.data(), chunk, chunk, out.data(), chunk);  // warm-up, past a block
  for (auto _ : state) {
    bank.process(in.data(), chunk, chunk, out.data(), chunk);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["x_real_time"] = benchmark::Counter(double(state.iterations()) * chunk / rate_hz,
                                                     benchmark::Counter::kIsRate);
  state.SetItemsProcessed(int64_t(state.iterations()) * channels * chunk);
}

void BM_S3CrossoverBank(benchmark::State& state) {
  vigil::PartitionedFirBank bank(random_taps(4, 8191), 2, vigil::PartitionedFirBank::uniform(256),
                                 vigil::FftPlanning::kEstimate, vigil::BlockPhases::kStaggered);
  run(state, bank, 2, 256, 48000);
}

// The same filter in non-uniform partitions (NonUniformFirBank::plan: 3 x 256, 3 x 1024, 2 x 4096),
// as the fir_bank stage now builds it; and split over a pool of state.range(0) threads.
// Arg: FFTW planning 0 estimate, 1 measure, 2 patient.
vigil::FftPlanning planning(int64_t arg) {
  return arg == 2 ? vigil::FftPlanning::kPatient : arg == 1 ? vigil::FftPlanning::kMeasure : vigil::FftPlanning::kEstimate;
}

void BM_S3CrossoverBankNonUniform(benchmark::State& state) {
  vigil::NonUniformFirBank bank(random_taps(4, 8191), 2, vigil::NonUniformFirBank::plan(8191, 256, 4),
                                planning(state.range(0)), vigil::BlockPhases::kStaggered);
  run(state, bank, 2, 256, 48000);
}

void BM_S3CrossoverBankThreads(benchmark::State& state) {
  vigil::WorkerPool pool(uint32_t(state.range(0)));
  vigil::StreamingFirBank bank(random_taps(4, 8191), 2, 256, 256, vigil::FftPlanning::kEstimate, &pool);
  run(state, bank, 2, 256, 48000);
}

// S3's own crossover (250, 2000, 8000 Hz at 48 kHz), as the fir_bank stage builds it: FFTW_MEASURE
// plans (the S3 config's fft_planning), channels over a pool of state.range(0) threads, and with
// state.range(1) = 1 the last band taken as the delayed input minus the others (the stage does so
// for every crossover) against 0: all four bands filtered.
void BM_S3CrossoverStage(benchmark::State& state) {
  std::vector<std::vector<float>> taps;
  for (const std::vector<double>& h : vigil::design_crossover({250, 2000, 8000}, 8191, 48000, vigil::WindowSpec{}))
    taps.emplace_back(h.begin(), h.end());
  vigil::WorkerPool pool(uint32_t(state.range(0)));
  vigil::StreamingFirBank bank(taps, 2, 256, 256, vigil::FftPlanning::kMeasure, &pool, vigil::FirForm::kAuto,
                               state.range(1) != 0);
  run(state, bank, 2, 256, 48000);
}

// S3's three filtered bands (the fourth is taken from them) on two threads three ways, measured
// plans, state.range(1) channels (S3: 2): 0 all on the caller (the plan of least work), 1 the
// channels split over a pool of 2 (one pool run per chunk), 2 the later levels deferred on a
// BlockWorker (plan(..., true): one hand-off per 1024-frame block and channel).
void BM_S3BankOnTwoThreads(benchmark::State& state) {
  const auto channels = uint32_t(state.range(1));
  const auto taps = random_taps(3, 8191);
  const auto fft = vigil::FftPlanning::kMeasure;
  const auto stagger = vigil::BlockPhases::kStaggered;
  if (state.range(0) == 0) {
    vigil::NonUniformFirBank bank(taps, channels, vigil::NonUniformFirBank::plan(8191, 256, 3), fft, stagger);
    run(state, bank, channels, 256, 48000);
  } else if (state.range(0) == 1) {
    struct Split {
      vigil::WorkerPool pool{2};
      uint32_t channels = 0;
      std::vector<std::unique_ptr<vigil::NonUniformFirBank>> banks;
      void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) {
        auto part = [&](uint32_t i) {
          const uint32_t first = i * (channels / 2);
          banks[i]->process(in + first * in_stride, in_stride, frames, out + first * out_stride, out_stride,
                            channels * out_stride);
        };
        pool.run(2, part);
      }
    } split;
    split.channels = channels;
    const std::vector<vigil::FirLevel> levels = vigil::NonUniformFirBank::plan(8191, 256, 3);
    for (int i = 0; i < 2; ++i)
      split.banks.push_back(std::make_unique<vigil::NonUniformFirBank>(taps, channels / 2, levels, fft, stagger));
    run(state, split, channels, 256, 48000);
  } else {
    vigil::BlockWorker worker;
    vigil::NonUniformFirBank bank(taps, channels, vigil::NonUniformFirBank::plan(8191, 256, 3, true), fft, stagger,
                                  &worker);
    run(state, bank, channels, 256, 48000);
  }
}

void BM_S2VibrationBank(benchmark::State& state) {
  vigil::PartitionedFirBank bank(random_taps(4, 8191), 64, vigil::PartitionedFirBank::uniform(8192),
                                 planning(state.range(0)), vigil::BlockPhases::kStaggered);
  run(state, bank, 64, 1024, 51200);
}

// As the fir_bank stage builds it, channels split over a pool of state.range(0) threads, within a
// latency of state.range(1) frames (8192: one 16384-point FFT block; 32768: a 32768-point one).
void BM_S2VibrationBankThreads(benchmark::State& state) {
  vigil::WorkerPool pool(uint32_t(state.range(0)));
  vigil::StreamingFirBank bank(random_taps(4, 8191), 64, 1024, uint32_t(state.range(1)), vigil::FftPlanning::kEstimate,
                               &pool);
  run(state, bank, 64, 1024, 51200);
}

}  // namespace

BENCHMARK(BM_S3CrossoverBank)->UseRealTime();
BENCHMARK(BM_S3CrossoverBankNonUniform)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();  // planning()
BENCHMARK(BM_S3CrossoverBankThreads)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_S3CrossoverStage)->ArgsProduct({{1, 2}, {0, 1}})->UseRealTime();
BENCHMARK(BM_S3BankOnTwoThreads)->ArgsProduct({{0, 1, 2}, {2, 8, 16, 32}})->UseRealTime();
BENCHMARK(BM_S2VibrationBank)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();  // planning()
BENCHMARK(BM_S2VibrationBankThreads)->ArgsProduct({{1, 2}, {8192, 32768}})->UseRealTime();
BENCHMARK_MAIN();
