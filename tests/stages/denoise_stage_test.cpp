// The wavelet_denoise stage on the CPU with its lanes split over a worker pool: every lane
// bit-identical to one StreamingDenoiser over all lanes (each lane's windows are computed alone
// either way), for pools of 1..4 threads and lane counts that do not divide evenly.
#include "stages/denoise_stage.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "../support/signals.hpp"
#include "../support/stage_run.hpp"

namespace vigil {
namespace {

DenoiseStageSettings settings() {
  DenoiseStageSettings s;
  s.wavelet = "db8";
  s.window = 512;
  return s;
}

TEST(DenoiseStage, LanesSplitOverThreadsEqualOneDenoiser) {
  const uint32_t channels = 3, bands = 2, lanes = channels * bands, total = 6000, max_frames = 700;
  const std::vector<float> x = test::randn(size_t(lanes) * total, 12);
  // The reference: one StreamingDenoiser over all lanes, in one call.
  StreamingDenoiser whole(settings().spec(), settings().window, lanes);
  std::vector<float> want(size_t(lanes) * total);
  whole.process(x.data(), total, total, want.data(), total);
  for (uint32_t threads : {1u, 2u, 4u}) {
    std::unique_ptr<WorkerPool> pool = threads > 1 ? std::make_unique<WorkerPool>(threads) : nullptr;
    DenoiseStage stage(settings(), pool.get());
    StreamFormat in;
    in.rate_hz = 1e6;
    in.channels = channels;
    in.bands = bands;
    const StreamFormat out = stage.prepare(in, max_frames);
    EXPECT_EQ(out.delay_frames, settings().window);
    const test::StageRun r =
        test::run_stage(stage, {channels, bands, bands, max_frames}, x, total, {700, 1, 333, 512});
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(r.out[i], want[i]) << threads << " threads, lane " << i / total << ", frame " << i % total;
  }
}

}  // namespace
}  // namespace vigil
