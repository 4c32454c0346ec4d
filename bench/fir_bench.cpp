// Streaming FIR throughput, single thread, one channel, 1024-frame chunks, random taps of length M:
// Vigil's direct form and partitioned overlap-save (several partition sizes) against the two
// things a user would otherwise pick on a CPU: a plain FFTW overlap-save at one block size, and
// liquid-dsp's firfilt_rrrf (when libliquid-dev is installed). Items = samples filtered.
// Run: build/bench/fir_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <fftw3.h>

#include <algorithm>
#include <complex>
#include <random>
#include <vector>

#include "dsp/fir_bank.hpp"
#include "dsp/partitioned_fir_bank.hpp"
#include "dsp/streaming_fir_bank.hpp"
#if VIGIL_HAVE_LIQUID
#include <complex.h>  // liquid.h needs C99 complex names
#include <liquid/liquid.h>
#endif

namespace {

constexpr uint32_t kChunk = 1024;

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// The textbook single-block overlap-save: FFT size N = next power of two >= 2M, hop N - M + 1.
class PlainOverlapSave {
 public:
  explicit PlainOverlapSave(const std::vector<float>& h) : m_(h.size()) {
    n_ = 1;
    while (n_ < 2 * m_) n_ *= 2;
    hop_ = n_ - m_ + 1;
    buf_ = fftwf_alloc_real(n_);
    out_ = fftwf_alloc_real(n_);
    spec_ = fftwf_alloc_complex(n_ / 2 + 1);
    h_spec_.resize(n_ / 2 + 1);
    fwd_ = fftwf_plan_dft_r2c_1d(int(n_), buf_, spec_, FFTW_MEASURE);
    inv_ = fftwf_plan_dft_c2r_1d(int(n_), spec_, out_, FFTW_MEASURE);
    std::fill_n(buf_, n_, 0.0f);
    std::copy(h.begin(), h.end(), buf_);
    fftwf_execute(fwd_);
    for (size_t k = 0; k <= n_ / 2; ++k) h_spec_[k] = {spec_[k][0] / float(n_), spec_[k][1] / float(n_)};
    std::fill_n(buf_, n_, 0.0f);
    ready_.assign(hop_, 0.0f);
  }
  ~PlainOverlapSave() {
    fftwf_destroy_plan(fwd_);
    fftwf_destroy_plan(inv_);
    fftwf_free(buf_);
    fftwf_free(out_);
    fftwf_free(spec_);
  }
  void process(const float* x, uint32_t frames, float* y) {
    for (uint32_t i = 0; i < frames;) {
      const size_t n = std::min<size_t>(hop_ - fill_, frames - i);
      std::copy_n(x + i, n, buf_ + (m_ - 1) + fill_);
      std::copy_n(ready_.data() + fill_, n, y + i);
      fill_ += n;
      i += uint32_t(n);
      if (fill_ == hop_) {
        fftwf_execute(fwd_);
        for (size_t k = 0; k <= n_ / 2; ++k) {
          const std::complex<float> v = std::complex<float>(spec_[k][0], spec_[k][1]) * h_spec_[k];
          spec_[k][0] = v.real();
          spec_[k][1] = v.imag();
        }
        fftwf_execute(inv_);
        std::copy_n(out_ + (m_ - 1), hop_, ready_.data());
        std::copy(buf_ + hop_, buf_ + n_, buf_);  // keep the last M-1 samples
        fill_ = 0;
      }
    }
  }

 private:
  size_t m_, n_ = 0, hop_ = 0, fill_ = 0;
  float *buf_, *out_;
  fftwf_complex* spec_;
  std::vector<std::complex<float>> h_spec_;
  std::vector<float> ready_;
  fftwf_plan fwd_, inv_;
};

template <typename Filter>
void run(benchmark::State& state, Filter&& filter) {
  const auto x = randn(kChunk * 64, 2);
  std::vector<float> y(kChunk);
  size_t at = 0;
  for (auto _ : state) {
    filter(x.data() + at, y.data());
    at = (at + kChunk) % x.size();
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kChunk);
}

void BM_VigilDirect(benchmark::State& state) {
  vigil::FirBank bank({randn(size_t(state.range(0)), 1)}, 1, kChunk);
  run(state, [&](const float* x, float* y) { bank.process(x, kChunk, kChunk, y, kChunk); });
}

void BM_VigilPartitioned(benchmark::State& state) {
  vigil::PartitionedFirBank bank({randn(size_t(state.range(0)), 1)}, 1,
                                 vigil::PartitionedFirBank::uniform(uint32_t(state.range(1))),
                                 vigil::FftPlanning::kMeasure);
  run(state, [&](const float* x, float* y) { bank.process(x, kChunk, kChunk, y, kChunk); });
}

// One partition with the FFT size of least modelled work: Vigil's throughput layout.
void BM_VigilSingleBlock(benchmark::State& state) {
  const auto m = size_t(state.range(0));
  const uint32_t n = state.range(1) ? uint32_t(state.range(1)) : vigil::PartitionedFirBank::best_fft_size(m);
  state.counters["fft"] = n;
  vigil::PartitionedFirBank bank({randn(m, 1)}, 1, vigil::PartitionedFirBank::single_block(m, n),
                                 vigil::FftPlanning::kMeasure);
  run(state, [&](const float* x, float* y) { bank.process(x, kChunk, kChunk, y, kChunk); });
}

// What the fir_bank stage runs when latency is not the constraint (a 2^16-frame budget).
void BM_VigilAuto(benchmark::State& state) {
  vigil::StreamingFirBank bank({randn(size_t(state.range(0)), 1)}, 1, kChunk, 1u << 16, vigil::FftPlanning::kMeasure);
  state.SetLabel(bank.describe());
  run(state, [&](const float* x, float* y) { bank.process(x, kChunk, kChunk, y, kChunk); });
}

void BM_FftwOverlapSave(benchmark::State& state) {
  PlainOverlapSave ols(randn(size_t(state.range(0)), 1));
  run(state, [&](const float* x, float* y) { ols.process(x, kChunk, y); });
}

#if VIGIL_HAVE_LIQUID
void BM_LiquidFirfilt(benchmark::State& state) {
  std::vector<float> h = randn(size_t(state.range(0)), 1);
  firfilt_rrrf q = firfilt_rrrf_create(h.data(), unsigned(h.size()));
  run(state, [&](const float* x, float* y) { firfilt_rrrf_execute_block(q, const_cast<float*>(x), kChunk, y); });
  firfilt_rrrf_destroy(q);
}
#endif

const std::vector<int64_t> kTaps = {16, 32, 64, 128, 256, 512, 1024, 2048, 8192};

void taps_only(benchmark::internal::Benchmark* b) {
  for (int64_t m : kTaps) b->Arg(m);
}
void taps_and_partitions(benchmark::internal::Benchmark* b) {
  for (int64_t m : kTaps)
    for (int64_t p : {16, 32, 64, 128, 256, 512, 1024, 2048})
      if (p <= std::max<int64_t>(16, 2 * m)) b->Args({m, p});
}

void taps_and_fft_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t m : kTaps) {
    b->Args({m, 0});  // the modelled best
    for (int64_t n = 64; n <= (1 << 18); n *= 2)
      if (n > 2 * m && n <= 64 * std::max<int64_t>(m, 64)) b->Args({m, n});
  }
}

}  // namespace

BENCHMARK(BM_VigilDirect)->Apply(taps_only);
BENCHMARK(BM_VigilPartitioned)->Apply(taps_and_partitions);
BENCHMARK(BM_VigilSingleBlock)->Apply(taps_and_fft_sizes);
BENCHMARK(BM_VigilAuto)->Apply(taps_only);
BENCHMARK(BM_FftwOverlapSave)->Apply(taps_only);
#if VIGIL_HAVE_LIQUID
BENCHMARK(BM_LiquidFirfilt)->Apply(taps_only);
#endif

BENCHMARK_MAIN();
