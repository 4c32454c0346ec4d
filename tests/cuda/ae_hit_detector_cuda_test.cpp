// The CUDA AE hit engine against its CPU twin on noisy multi-lane streams with Poisson bursts:
// identical hit lists (every decision is a float comparison) and level intervals, sums within
// 1e-9 relative (only the order of double additions differs); results poisoned before each
// call; chunk sizes 1, 31, 33, odd and large; chunked equals one-shot. Chunks of 4096 frames and
// more run segmented (cuda/ae_hits_segmented.cu) except the one-shot 2^20 and the floating case.
#include "cuda/ae_hit_detector_cuda.hpp"

#include <gtest/gtest.h>

#include <random>

#include "../support/ae_compare.hpp"
#include "../support/ae_lanes.hpp"
#include "cuda/cuda_check.hpp"

namespace vigil {
namespace {

constexpr double kRate = 2e6;
constexpr double kSumRel = 1e-9;  // double sums of <= 2^20 terms in another order

struct Result {
  std::vector<AeHit> hits;
  std::vector<AeLevel> levels;
};

Result run_cpu(const AeSampleParams& p, const std::vector<float>& x, uint32_t lanes, uint32_t frames,
               const std::vector<uint32_t>& chunks) {
  AeHitDetector d(p, lanes);
  Result r;
  std::vector<std::vector<AeHit>> per_lane(lanes);
  std::vector<std::vector<AeLevel>> lv(lanes);
  for (uint32_t l = 0; l < lanes; ++l) {
    uint32_t at = 0;
    for (size_t k = 0; at < frames; ++k) {
      const uint32_t n = std::min(chunks[k % chunks.size()], frames - at);
      d.push(l, x.data() + size_t(l) * frames + at, n, at, [&](const AeHit& h) { per_lane[l].push_back(h); },
             [&](const AeLevel& v) { lv[l].push_back(v); });
      at += n;
    }
  }
  for (uint32_t l = 0; l < lanes; ++l) {
    r.hits.insert(r.hits.end(), per_lane[l].begin(), per_lane[l].end());
    r.levels.insert(r.levels.end(), lv[l].begin(), lv[l].end());
  }
  return r;
}

// split: keep scratch to run chunks of >= 4096 frames segmented (else one warp per lane).
Result run_gpu(const AeSampleParams& p, const std::vector<float>& x, uint32_t lanes, uint32_t frames,
               const std::vector<uint32_t>& chunks, bool split = true) {
  float* d_x = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), x.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  cuda::AeHitDetectorCuda d(p, lanes, 1u << 18, /*poison=*/true, false, split ? 1u << 17 : 0u);
  std::vector<std::vector<AeHit>> per_lane(lanes);
  std::vector<std::vector<AeLevel>> lv(lanes);
  uint32_t at = 0;
  for (size_t k = 0; at < frames; ++k) {
    const uint32_t n = std::min(chunks[k % chunks.size()], frames - at);
    VIGIL_CUDA_CHECK(d.enqueue(d_x + at, frames, n, at, nullptr));
    std::vector<AeHit> h;
    std::vector<AeLevel> v;
    d.collect(h, v, nullptr);
    for (const AeHit& e : h) per_lane.at(e.channel).push_back(e);
    for (const AeLevel& e : v) lv.at(e.channel).push_back(e);
    at += n;
  }
  cudaFree(d_x);
  EXPECT_EQ(d.dropped(), 0u);
  Result r;
  for (uint32_t l = 0; l < lanes; ++l) {
    r.hits.insert(r.hits.end(), per_lane[l].begin(), per_lane[l].end());
    r.levels.insert(r.levels.end(), lv[l].begin(), lv[l].end());
  }
  return r;
}

void expect_same(const Result& got, const Result& want) {
  ASSERT_EQ(got.hits.size(), want.hits.size());
  for (size_t i = 0; i < want.hits.size(); ++i) {
    const AeHit &g = got.hits[i], &w = want.hits[i];
    SCOPED_TRACE("hit " + std::to_string(i) + " lane " + std::to_string(w.channel) + " arrival " +
                 std::to_string(w.arrival_frame));
    ASSERT_EQ(g.channel, w.channel);
    ASSERT_EQ(g.arrival_frame, w.arrival_frame);
    test::expect_same_hit_after_arrival(g, w, kSumRel);
  }
  ASSERT_EQ(got.levels.size(), want.levels.size());
  for (size_t i = 0; i < want.levels.size(); ++i) {
    EXPECT_EQ(got.levels[i].channel, want.levels[i].channel);
    test::expect_same_level(got.levels[i], want.levels[i], kSumRel);
  }
}

struct Case {
  const char* name;
  AeHitSettings s;
};

std::vector<Case> cases() {
  AeHitSettings rig;
  rig.threshold_db = 45;
  rig.full_scale_v = 10;
  rig.preamp_gain_db = 40;
  rig.level_interval_s = 0.01;
  AeHitSettings floating = rig;
  floating.threshold_db = 30;
  floating.floating_margin_db = 18;
  floating.floating_window_s = 0.00123;  // 2460 samples: boundaries fall anywhere in a warp step
  AeHitSettings tight = rig;             // many closures of every kind
  tight.hdt_s = 20e-6;
  tight.pdt_s = 5e-6;
  tight.hlt_s = 7e-6;
  tight.max_duration_s = 150e-6;
  tight.level_interval_s = 0.0005005;  // 1001 samples
  return {{"rig", rig}, {"floating", floating}, {"tight", tight}};
}

TEST(AeHitDetectorCuda, SameHitsOnAShortRun) {  // the one compute-sanitizer runs
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  const uint32_t frames = 1 << 16, lanes = 5;
  const auto x = test::ae_lanes(kRate, lanes, frames, 7, 7);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const AeSampleParams p = ae_sample_params(c.s, kRate);
    const Result want = run_cpu(p, x, lanes, frames, {31, 33, 1, 4097});
    EXPECT_GT(want.hits.size(), 10u);
    // 4097 frames run segmented, except with the floating threshold (one warp per lane).
    const cuda::AeHitDetectorCuda probe(p, lanes, 16, false, false, 1u << 17);
    EXPECT_EQ(probe.segmented(4097), std::string(c.name) != "floating");
    EXPECT_FALSE(probe.segmented(4095)) << "fewer than two segments";
    expect_same(run_gpu(p, x, lanes, frames, {31, 33, 1, 4097}), want);
    expect_same(run_gpu(p, x, lanes, frames, {31, 33, 1, 4097}, /*split=*/false), want);
  }
}

TEST(AeHitDetectorCuda, SameHitsAsTheCpuTwinEveryLaneCountAndChunking) {
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "no usable CUDA device (" << why << "): GPU tests run in scripts/gpu-check.sh";
  const uint32_t frames = 1 << 20;
  std::mt19937 rng(42);
  std::vector<uint32_t> random_chunks;
  for (int i = 0; i < 50; ++i) random_chunks.push_back(uint32_t(1 + rng() % 70000));
  for (const uint32_t lanes : {1u, 3u, 16u, 37u}) {
    const auto x = test::ae_lanes(kRate, lanes, frames, 100 + lanes, 100 + lanes);
    for (const Case& c : cases()) {
      const AeSampleParams p = ae_sample_params(c.s, kRate);
      for (const auto& chunks : {std::vector<uint32_t>{frames}, std::vector<uint32_t>{4096},
                                 std::vector<uint32_t>{31, 33, 1, 65537}, random_chunks}) {
        SCOPED_TRACE(std::string(c.name) + " lanes " + std::to_string(lanes) + " first chunk " + std::to_string(chunks[0]));
        const Result want = run_cpu(p, x, lanes, frames, chunks);
        const Result got = run_gpu(p, x, lanes, frames, chunks);
        EXPECT_GT(want.hits.size(), 50u * lanes);  // the comparison has substance
        EXPECT_GT(want.levels.size(), 0u);
        if (std::string(c.name) == "tight") {
          const auto truncated = std::count_if(want.hits.begin(), want.hits.end(), [](const AeHit& h) { return h.truncated; });
          EXPECT_GT(truncated, 0);
        }
        expect_same(got, want);
        if (lanes == 37 && chunks[0] != frames) {  // GPU chunked equals GPU one-shot
          const Result whole = run_gpu(p, x, lanes, frames, {frames});
          expect_same(got, whole);
        }
      }
    }
  }
}

}  // namespace
}  // namespace vigil
