// StreamingDenoiserCuda against its CPU twin, dsp/StreamingDenoiser: the same overlapped windows,
// thresholds and overlap-add, for several lanes, windows from 4 to 4096 samples, wavelets from
// haar to db20, soft and hard, one sigma or one per level, chunks of every size class (1 sample,
// less than a hop, exactly a hop, many windows, the largest allowed); fresh random input with
// tones and bursts; the output poisoned (NaN) before every call. Chunking changes nothing (bit for
// bit), and reset() starts over.
#include "cuda/streaming_denoiser_cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/tolerances.hpp"

namespace vigil {
namespace {

// lanes x total, lane-major: noise, a tone per lane, and a few bursts.
std::vector<float> make_input(uint32_t lanes, uint32_t total, uint32_t seed) {
  std::vector<float> x = test::randn(size_t(lanes) * total, seed, 0.05f);
  std::mt19937 rng(seed + 1);
  std::uniform_int_distribution<uint32_t> at(0, total - 1);
  for (uint32_t l = 0; l < lanes; ++l) {
    for (uint32_t t = 0; t < total; ++t) x[size_t(l) * total + t] += 0.5f * float(std::sin(0.01 * (l + 1) * t));
    for (int b = 0; b < 4; ++b) {
      const uint32_t t0 = at(rng);
      for (uint32_t t = t0; t < std::min(total, t0 + 64); ++t) x[size_t(l) * total + t] += 2.0f * float(std::exp(-double(t - t0) / 12.0));
    }
  }
  return x;
}

// Runs the GPU denoiser over x in chunks of the given sizes (cycled), each output poisoned first.
std::vector<float> run_gpu(cuda::StreamingDenoiserCuda& d, const std::vector<float>& x, uint32_t lanes, uint32_t total,
                           const std::vector<uint32_t>& sizes, uint32_t max_frames) {
  test::DeviceArray<float> in(size_t(lanes) * max_frames), out(size_t(lanes) * max_frames);
  std::vector<float> y(size_t(lanes) * total), chunk(size_t(lanes) * max_frames);
  const std::vector<float> nan(size_t(lanes) * max_frames, std::numeric_limits<float>::quiet_NaN());
  size_t k = 0;
  for (uint32_t at = 0; at < total; ++k) {
    const uint32_t n = std::min({sizes[k % sizes.size()], total - at, max_frames});
    for (uint32_t l = 0; l < lanes; ++l)
      std::copy_n(x.data() + size_t(l) * total + at, n, chunk.data() + size_t(l) * max_frames);
    in.put(chunk);
    out.put(nan);
    EXPECT_EQ(d.process(in.p, max_frames, n, out.p, max_frames), cudaSuccess);
    const std::vector<float> o = out.get();
    for (uint32_t l = 0; l < lanes; ++l)
      for (uint32_t i = 0; i < n; ++i) {
        const float v = o[size_t(l) * max_frames + i];
        if (!std::isfinite(v)) {
          ADD_FAILURE() << "lane " << l << " frame " << at + i << " not written";
          return y;
        }
        y[size_t(l) * total + at + i] = v;
      }
    at += n;
  }
  return y;
}

std::vector<float> run_cpu(const DenoiseSpec& spec, size_t window, const std::vector<float>& x, uint32_t lanes,
                           uint32_t total) {
  StreamingDenoiser cpu(spec, window, lanes);
  std::vector<float> y(x.size());
  cpu.process(x.data(), total, total, y.data(), total);
  return y;
}

struct Case {
  const char* wavelet;
  size_t window;
  ThresholdMode mode;
  NoiseEstimate noise;
  uint32_t lanes;
  unsigned levels = 0;  // 0: the deepest pywt allows
};

TEST(StreamingDenoiserCuda, EqualsTheCpuTwinForEveryWindowWaveletAndMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {
      {"haar", 4, ThresholdMode::kSoft, NoiseEstimate::kFinest, 2},
      {"haar", 16, ThresholdMode::kHard, NoiseEstimate::kPerLevel, 3},
      {"db4", 64, ThresholdMode::kSoft, NoiseEstimate::kPerLevel, 1},
      {"db8", 256, ThresholdMode::kSoft, NoiseEstimate::kFinest, 7},
      {"sym5", 1024, ThresholdMode::kHard, NoiseEstimate::kFinest, 5},
      {"db8", 1024, ThresholdMode::kSoft, NoiseEstimate::kPerLevel, 4},
      {"db20", 2048, ThresholdMode::kSoft, NoiseEstimate::kFinest, 2},
      {"db8", 4096, ThresholdMode::kSoft, NoiseEstimate::kFinest, 3},
      // 16-tap wavelets take the haloed kernel while the deepest approximation keeps 8 samples:
      // its smallest case (16 -> 8), hard and per level, and past the rule (the generic kernel).
      {"db8", 16, ThresholdMode::kSoft, NoiseEstimate::kFinest, 2},
      {"sym8", 512, ThresholdMode::kHard, NoiseEstimate::kPerLevel, 3},
      {"db8", 256, ThresholdMode::kSoft, NoiseEstimate::kPerLevel, 2, 6},
      {"db8", 8, ThresholdMode::kHard, NoiseEstimate::kFinest, 1},
  };
  uint32_t seed = std::random_device{}();
  for (const Case& c : cases) {
    DenoiseSpec spec;
    spec.wavelet = c.wavelet;
    spec.mode = c.mode;
    spec.noise = c.noise;
    spec.levels = c.levels;
    const uint32_t hop = uint32_t(c.window / 2), max_frames = uint32_t(3 * c.window + 5);
    const uint32_t total = uint32_t(12 * c.window + 777);
    const std::vector<float> x = make_input(c.lanes, total, ++seed);
    cuda::StreamingDenoiserCuda gpu(spec, c.window, c.lanes, max_frames);
    EXPECT_EQ(gpu.latency_frames(), c.window);
    // 1 sample, under a hop, a hop, more than a window, the most allowed, odd sizes.
    const std::vector<uint32_t> sizes = {1, hop - 1 > 0 ? hop - 1 : 1, hop, uint32_t(c.window + 3), max_frames, 7};
    const std::vector<float> got = run_gpu(gpu, x, c.lanes, total, sizes, max_frames);
    const std::vector<float> want = run_cpu(spec, c.window, x, c.lanes, total);
    const std::string what = std::string(c.wavelet) + " window " + std::to_string(c.window) +
                             (c.mode == ThresholdMode::kSoft ? " soft" : " hard") +
                             (c.noise == NoiseEstimate::kFinest ? " finest" : " per level") + " levels " +
                             std::to_string(c.levels) + " seed " + std::to_string(seed);
    EXPECT_LE(test::rel_l2(got, want), test::kGpuVsCpuRelL2) << what;
    // Output is the input's denoised version delayed by one window: the first window is silent.
    for (uint32_t l = 0; l < c.lanes; ++l) EXPECT_EQ(got[size_t(l) * total], 0.0f) << what;
    // Other chunkings, and after a reset: the very same samples.
    gpu.reset();
    const std::vector<float> again = run_gpu(gpu, x, c.lanes, total, {max_frames, 3, hop + 1}, max_frames);
    EXPECT_EQ(again, got) << what << ": chunking or reset changed the output";
  }
}

TEST(StreamingDenoiserCuda, RejectsWhatItCannotRun) {
  VIGIL_SKIP_WITHOUT_GPU();
  DenoiseSpec spec;
  EXPECT_THROW(cuda::StreamingDenoiserCuda(spec, 1000, 1, 100), std::invalid_argument);   // not a power of two
  EXPECT_THROW(cuda::StreamingDenoiserCuda(spec, 8192, 1, 100), std::invalid_argument);   // over 4096
  EXPECT_THROW(cuda::StreamingDenoiserCuda(spec, 1024, 0, 100), std::invalid_argument);
  spec.wavelet = "nope";
  EXPECT_THROW(cuda::StreamingDenoiserCuda(spec, 1024, 1, 100), std::invalid_argument);
  cuda::StreamingDenoiserCuda ok(DenoiseSpec{}, 1024, 2, 100);
  test::DeviceArray<float> buf(2 * 200);
  EXPECT_EQ(ok.process(buf.p, 200, 101, buf.p, 200), cudaErrorInvalidValue);  // more than max_frames
}

}  // namespace
}  // namespace vigil
