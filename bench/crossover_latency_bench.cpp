// Issue 8's crossover case: 4 bands x 8191 taps (a complementary crossover at 250 / 2000 / 8000
// Hz), stereo at 48 kHz, 1024-frame chunks, host memory in -> host memory out, per chunk, as the
// pipeline calls the fir_bank stage. Prints per-chunk wall-time quantiles (p50, p99, p99.9, max)
// over CHUNKS chunks after 200 warm-up chunks, for the CPU stage and the CUDA stage with copy and
// with mapped staging, each chunk as a replayed CUDA graph and launch by launch, one JSON line each. The input changes every chunk (fresh random samples).
// Usage: crossover_latency_bench [CHUNKS]   (default 20000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "stages/fir_bank_stage.hpp"
#if VIGIL_HAVE_CUDA
#include "cuda/cuda_check.hpp"
#include "stages/fir_bank_cuda_stage.hpp"
#endif

namespace {

constexpr uint32_t kChannels = 2, kFrames = 1024, kBands = 4;

vigil::FirBankSettings crossover() {
  vigil::FirBankSettings s;
  s.taps = 8191;
  s.crossover_hz = {250, 2000, 8000};
  for (int b = 0; b < 4; ++b) s.bands.push_back({"band" + std::to_string(b), vigil::FilterType::kBandpass, 0, 0});
  return s;
}

void measure(const char* name, vigil::Stage& stage, int chunks) {
  vigil::StreamFormat in;
  in.rate_hz = 48000;
  in.channels = kChannels;
  in.bands = 1;
  stage.prepare(in, kFrames);
  std::mt19937 rng(1);
  std::normal_distribution<float> n;
  std::vector<float> x(size_t(kChannels) * kFrames * 16), y(size_t(kBands) * kChannels * kFrames);
  for (float& v : x) v = n(rng);
  vigil::Exec exec;
  std::vector<double> us;
  us.reserve(size_t(chunks));
  for (int k = -200; k < chunks; ++k) {
    // One of 16 pre-generated chunks each time: the data differs chunk to chunk, generation is not timed.
    vigil::Block bin{x.data() + size_t(kChannels) * kFrames * size_t((k + 200) % 16), kFrames, kFrames, kChannels, 1};
    vigil::Block bout{y.data(), kFrames, 0, kChannels, kBands};
    const auto t0 = std::chrono::steady_clock::now();
    stage.process(bin, bout, exec);
    const auto t1 = std::chrono::steady_clock::now();
    if (k >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  auto q = [&](double p) { return us[std::min(us.size() - 1, size_t(p * double(us.size())))]; };
  std::printf("{\"stage\": \"%s\", \"chunks\": %d, \"p50_us\": %.2f, \"p99_us\": %.2f, \"p999_us\": %.2f, \"max_us\": %.2f}\n",
              name, chunks, q(0.5), q(0.99), q(0.999), us.back());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int chunks = argc > 1 ? std::atoi(argv[1]) : 20000;
  {
    vigil::FirBankStage cpu(crossover());
    measure("cpu", cpu, std::max(1, chunks / 10));  // the CPU is slower: fewer chunks
  }
#if VIGIL_HAVE_CUDA
  if (vigil::cuda::device_available()) {
    // Each chunk as one replayed CUDA graph (the default) and launch by launch, both staging modes.
    for (const bool graphs : {true, false})
      for (const bool mapped : {false, true}) {
        vigil::FirBankCudaStage gpu(crossover(), 0, {mapped, 0, graphs});
        const std::string name = std::string(mapped ? "cuda mapped" : "cuda copy") + (graphs ? " graph" : " launches");
        measure(name.c_str(), gpu, chunks);
        if (graphs && gpu.graph_chunks() == 0) std::printf("{\"warning\": \"%s replayed no graph\"}\n", name.c_str());
      }
  } else {
    std::printf("{\"stage\": \"cuda\", \"skipped\": \"no CUDA device\"}\n");
  }
#endif
  return 0;
}
