// What the band_rms stage's CUDA twin relies on (pipeline/moments_cuda_stage), checked on the CPU:
// cutting each chunk where cut() says (at window ends) and handing process_moments() every lane's
// moments_of() of those runs gives process()'s alarms, at the same frames, with RMS values within
// 1e-12 relative (the squares summed in another order), for chunks of 1 to 8192 frames; where cut()
// returns 0 (more runs than asked for) the chunk goes through process() as the twin does it.
#include "stages/band_rms_stage.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "../support/moments_run.hpp"
#include "../support/tolerances.hpp"
#include "core/spsc_queue.hpp"
#include "dsp/window_moments.hpp"
#include "dsp/windowed_rms.hpp"
#include "stages/event_record.hpp"

namespace vigil {
namespace {

// WindowedRms against a reference summed in long double one sample at a time: every window's
// RMS within 1e-12 relative and at the same index, fed in chunks of 1 to 5000 samples that start
// and end anywhere in a window (windows of 1, 7, 1000 and 4096 samples).
TEST(WindowedRms, MatchesALongDoubleReferenceInAnyChunking) {
  std::mt19937 rng(21);
  std::normal_distribution<float> noise;
  std::vector<float> x(60000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (0.3f + float(i % 9000) / 3000.0f) * noise(rng);
  for (const uint64_t window : {1ull, 7ull, 1000ull, 4096ull}) {
    SCOPED_TRACE(window);
    std::vector<std::pair<double, size_t>> want, got;
    long double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      sum += (long double)x[i] * x[i];
      if ((i + 1) % window == 0) {
        want.emplace_back(double(std::sqrt(sum / window)), i);
        sum = 0;
      }
    }
    WindowedRms rms(window);
    std::uniform_int_distribution<uint32_t> size(1, 5000);
    for (size_t at = 0; at < x.size();) {
      const auto n = uint32_t(std::min<size_t>(size(rng), x.size() - at));
      rms.push(x.data() + at, n, [&](double r, uint32_t i) { got.emplace_back(r, at + i); });
      at += n;
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].second, want[k].second) << k;
      EXPECT_NEAR(got[k].first, want[k].first, test::kDoubleSumRel * want[k].first) << k;
    }
  }
}

TEST(BandRmsStage, ProcessMomentsOfTheCutRunsGivesProcessesAlarms) {
  constexpr double rate = 25600;
  constexpr uint32_t channels = 3, bands = 2, lanes = channels * bands, total = 4 * 25600, max_chunk = 8192;
  BandRmsSettings s;
  s.window_s = 0.005;  // 128 samples: an 8192-frame chunk has 64 or 65 runs
  s.threshold = 0.9;
  s.clear_threshold = 0.7;
  std::mt19937 rng(9);
  std::normal_distribution<float> noise;
  std::vector<float> x(size_t(lanes) * total);
  for (uint32_t l = 0; l < lanes; ++l)
    for (uint32_t i = 0; i < total; ++i) {
      const double level = 0.4 + 0.8 * std::fabs(std::sin(5.0 * double(i) / total * (1 + l)));
      x[size_t(l) * total + i] = float(0.05 * l + level * noise(rng));
    }
  const StreamFormat in{rate, channels, bands, {"a", "b"}, 0};
  BandRmsStage plain(s, 2), by_moments(s, 2);
  plain.prepare(in, max_chunk);
  by_moments.prepare(in, max_chunk);
  ASSERT_TRUE(by_moments.sums_segments());
  const test::MomentsRun run =
      test::run_plain_and_by_moments(plain, by_moments, x, total, channels, bands, max_chunk, {1000, 8192, 1, 777, 128, 4096});
  const std::vector<EventRecord>& want = run.want;
  const std::vector<EventRecord>& got = run.got;
  EXPECT_EQ(run.dropped, 0u);
  EXPECT_GT(run.cut_chunks, 10u);
  EXPECT_GT(run.whole_chunks, 0u);  // some 8192-frame chunks cut into 65 runs
  size_t raised = 0, cleared = 0;
  for (const EventRecord& e : want) {
    raised += e.kind == EventKind::kAlarmRaised;
    cleared += e.kind == EventKind::kAlarmCleared;
  }
  EXPECT_GT(raised, 10u);
  EXPECT_GT(cleared, 10u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(got[i].kind, want[i].kind);
    ASSERT_EQ(got[i].band, want[i].band);
    ASSERT_EQ(got[i].channel, want[i].channel);
    ASSERT_EQ(got[i].frame, want[i].frame);
    EXPECT_NEAR(got[i].value, want[i].value, test::kDoubleSumRel * want[i].value);
    EXPECT_EQ(got[i].threshold, want[i].threshold);
  }
  for (uint32_t b = 0; b < bands; ++b)
    for (uint32_t c = 0; c < channels; ++c)
      EXPECT_NEAR(by_moments.last_rms(b, c), plain.last_rms(b, c), test::kDoubleSumRel * plain.last_rms(b, c));
}

}  // namespace
}  // namespace vigil
