// What a stage's CUDA twin relies on (pipeline/moments_cuda_stage), driven on the CPU: the same
// lanes fed to one stage by process() and to another by cut() + moments_of() of each run +
// process_moments() (process() where cut() says 0: more runs than the GPU takes), in chunks whose
// sizes cycle through `sizes`. For the stage tests of VibrationStage and BandRmsStage.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "core/spsc_queue.hpp"
#include "dsp/window_moments.hpp"
#include "stages/event_record.hpp"
#include "stages/stage.hpp"

namespace vigil::test {

struct MomentsRun {
  std::vector<EventRecord> want, got;  // process()'s events; the moments' events
  size_t cut_chunks = 0, whole_chunks = 0;
  uint64_t dropped = 0;
};

// x: bands x channels lanes of `total` frames, lane-major; both stages prepared already.
template <class S>
MomentsRun run_plain_and_by_moments(S& plain, S& by_moments, const std::vector<float>& x, uint32_t total,
                                    uint32_t channels, uint32_t bands, uint32_t max_chunk,
                                    const std::vector<uint32_t>& sizes) {
  constexpr uint32_t kMaxRuns = 64;
  const uint32_t lanes = channels * bands;
  MomentsRun r;
  std::vector<float> chunk(size_t(lanes) * max_chunk);
  SpscQueue<EventRecord> queue(16384);
  std::atomic<uint64_t> dropped{0};
  std::vector<Moments> moments(size_t(lanes) * kMaxRuns);
  uint64_t k = 0;
  for (uint32_t at = 0; at < total; ++k) {
    const uint32_t n = std::min(sizes[k % sizes.size()], total - at);
    for (uint32_t l = 0; l < lanes; ++l) std::copy_n(x.data() + size_t(l) * total + at, n, chunk.data() + size_t(l) * max_chunk);
    Block b{chunk.data(), max_chunk, n, channels, bands}, none{nullptr, 0, 0, channels, 0};
    Exec exec;
    exec.chunk.first_frame = at;
    exec.events = &queue;
    exec.events_dropped = &dropped;
    EXPECT_EQ(plain.process(b, none, exec), StageStatus::kOk);
    EventRecord ev;
    while (queue.pop(ev)) r.want.push_back(ev);
    uint32_t starts[kMaxRuns + 1];
    const uint32_t runs = by_moments.cut(n, starts, kMaxRuns);
    if (runs == 0) {
      ++r.whole_chunks;
      EXPECT_EQ(by_moments.process(b, none, exec), StageStatus::kOk);
    } else {
      ++r.cut_chunks;
      for (uint32_t l = 0; l < lanes; ++l)
        for (uint32_t i = 0; i < runs; ++i) {
          EXPECT_LT(starts[i], starts[i + 1]);
          moments[size_t(l) * runs + i] = moments_of(b.data + size_t(l) * max_chunk + starts[i], starts[i + 1] - starts[i]);
        }
      EXPECT_EQ(starts[runs], n);
      Block no_samples{nullptr, max_chunk, n, channels, bands};  // process_moments reads no sample
      EXPECT_EQ(by_moments.process_moments(no_samples, moments.data(), runs, exec), StageStatus::kOk);
    }
    while (queue.pop(ev)) r.got.push_back(ev);
    at += n;
  }
  r.dropped = dropped.load();
  return r;
}

}  // namespace vigil::test
