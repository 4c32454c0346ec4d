// The CPU fir_bank stage: the form it picks and its delay are in its status, its declared delay is
// that form's latency, and S3's crossover (non-uniform partitions) comes out as the float64
// convolution of the designed taps, delayed by one 256-frame block.
#include "stages/fir_bank_stage.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../support/signals.hpp"
#include "../support/stage_run.hpp"
#include "../support/tolerances.hpp"
#include "core/worker_pool.hpp"

namespace vigil {
namespace {

FirBankSettings crossover(uint32_t taps) {
  FirBankSettings s;
  s.taps = taps;
  s.crossover_hz = {250, 2000, 8000};
  for (const char* name : {"low", "lowmid", "highmid", "high"}) s.bands.push_back({name, FilterType::kBandpass, 0, 0});
  return s;
}

// The form named in the status; its delay there must be the one the stage declared.
std::string form_of(const FirBankStage& stage, uint32_t declared_delay) {
  nlohmann::json status;
  stage.add_status(status);
  EXPECT_EQ(status.value("delay_frames", 99999u), declared_delay);
  return status.value("form", "");
}

TEST(FirBankStage, StatusNamesTheFormAndTheDelayIsItsLatency) {
  const StreamFormat mono{48000, 2, 1, {""}, 10};
  FirBankStage s3(crossover(8191));
  EXPECT_EQ(s3.prepare(mono, 256).delay_frames, 10u + 256u);
  // A crossover's bands are complementary: its last band is the delayed input minus the others.
  EXPECT_EQ(form_of(s3, 256), "non-uniformly partitioned overlap-save, partitions x block: 3 x 256, 8 x 1024, "
                         "last band as the delayed input minus the others");
  FirBankStage short_filter(crossover(63));
  EXPECT_EQ(short_filter.prepare(mono, 1024).delay_frames, 10u + 450u);
  EXPECT_EQ(form_of(short_filter, 450), "overlap-save, FFT 512, block 450, last band as the delayed input minus the others");
  FirBankSettings tiny = crossover(31);
  FirBankStage direct(tiny);
  EXPECT_EQ(direct.prepare(mono, 1024).delay_frames, 10u);
  EXPECT_EQ(form_of(direct, 0), "direct form");
}

// With a pool of two threads the larger partitions run deferred on a thread of their own: the same
// latency, the same output.
TEST(FirBankStage, TheCrossoverInNonUniformPartitionsIsTheConvolutionDelayed) {
  const uint32_t channels = 2, total = 6000, chunk = 256;
  const FirBankSettings settings = crossover(8191);
  WorkerPool pool(2);
  for (WorkerPool* with : {static_cast<WorkerPool*>(nullptr), &pool}) {
    SCOPED_TRACE(with ? "pool of 2" : "one thread");
    FirBankStage stage(settings, with);
    EXPECT_EQ(stage.prepare({48000, channels, 1, {""}, 0}, chunk).delay_frames, 256u);
    if (with) {
      EXPECT_EQ(form_of(stage, 256), "non-uniformly partitioned overlap-save, partitions x block: 5 x 256, "
                                     "7 x 1024 (deferred 512), deferred levels on a second thread, last band as the "
                                     "delayed input minus the others");
    }
    const std::vector<std::vector<float>> taps = FirBankStage::design(settings, 48000);
    const std::vector<float> x = test::randn(size_t(channels) * total, 31);
    const test::StageRun run = test::run_stage(stage, {channels, 1, 4, chunk}, x, total, {chunk, 100, 256, 7});
    for (uint32_t b = 0; b < 4; ++b)
      for (uint32_t c = 0; c < channels; ++c) {
        std::vector<double> ref(total - chunk);
        double peak = 1;
        for (uint32_t n = 0; n < ref.size(); ++n) {
          for (uint32_t j = 0; j <= n && j < taps[b].size(); ++j)
            ref[n] += double(taps[b][j]) * x[size_t(c) * total + n - j];
          peak = std::max(peak, std::fabs(ref[n]));
        }
        const float* y = &run.out[(size_t(b) * channels + c) * total];
        for (uint32_t n = 0; n < ref.size(); ++n)
          ASSERT_NEAR(y[n + chunk], ref[n], test::kFirOutputRel * peak)
              << "band " << b << " channel " << c << " frame " << n;
      }
  }
}

}  // namespace
}  // namespace vigil
