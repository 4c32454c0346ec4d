// Runs a pipeline stage over a whole input in chunks, as the pipeline calls it: for the stage
// tests that compare a CUDA stage with its CPU twin. The output block is poisoned (NaN) before
// every chunk; a sample the stage did not write fails the test.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "core/spsc_queue.hpp"
#include "stages/event_record.hpp"
#include "stages/stage.hpp"

namespace vigil::test {

struct StageRun {
  std::vector<float> out;  // out_bands x channels lanes of `total` frames, lane-major
  std::vector<EventRecord> events;
  uint64_t events_dropped = 0;  // the queue was full (over 8192 in one chunk)
  uint64_t chunks = 0;          // process() calls
};

struct StageShape {
  uint32_t channels = 1;
  uint32_t in_bands = 1;   // the input has in_bands x channels lanes
  uint32_t out_bands = 1;  // the output out_bands x channels
  uint32_t max_frames = 1; // the blocks' lane stride: no chunk is longer
};

// x: in_bands x channels lanes of `total` frames, lane-major. Chunk k has sizes[k % size] frames
// (at most what is left); before(k), when given, runs before chunk k.
inline StageRun run_stage(Stage& stage, const StageShape& shape, const std::vector<float>& x, uint32_t total,
                          const std::vector<uint32_t>& sizes, const std::function<void(uint64_t chunk)>& before = {}) {
  const uint32_t in_lanes = shape.in_bands * shape.channels, out_lanes = shape.out_bands * shape.channels;
  const uint32_t stride = shape.max_frames;
  std::vector<float> in(size_t(in_lanes) * stride), out(size_t(out_lanes) * stride);
  SpscQueue<EventRecord> queue(8192);  // drained after every chunk
  std::atomic<uint64_t> dropped{0};
  StageRun r;
  r.out.assign(size_t(out_lanes) * total, 0.0f);
  uint64_t k = 0;
  for (uint32_t at = 0; at < total; ++k) {
    const uint32_t n = std::min(sizes[k % sizes.size()], total - at);
    if (before) before(k);
    for (uint32_t l = 0; l < in_lanes; ++l)
      std::copy_n(x.data() + size_t(l) * total + at, n, in.data() + size_t(l) * stride);
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    Block bin{in.data(), stride, n, shape.channels, shape.in_bands};
    Block bout{out.data(), stride, 0, shape.channels, shape.out_bands};
    Exec exec;
    exec.chunk.first_frame = at;
    exec.events = &queue;
    exec.events_dropped = &dropped;
    EXPECT_EQ(stage.process(bin, bout, exec), StageStatus::kOk);
    if (out_lanes) {  // events-only stages (no output lanes) leave it
      EXPECT_EQ(bout.frames, n);
    }
    for (uint32_t l = 0; l < out_lanes; ++l)
      for (uint32_t i = 0; i < n; ++i) {
        const float v = out[size_t(l) * stride + i];
        if (!std::isfinite(v)) {
          ADD_FAILURE() << "lane " << l << " frame " << at + i << " not written";
          return r;
        }
        r.out[size_t(l) * total + at + i] = v;
      }
    at += n;
    EventRecord ev;
    while (queue.pop(ev)) r.events.push_back(ev);
  }
  r.events_dropped = dropped.load();
  r.chunks = k;
  return r;
}

// A CUDA stage's run with one injected launch failure: exactly one event, the stage's `backend`
// fallback at `frame`, and the stage's status on the CPU twin with one CUDA error counted.
inline void expect_one_fallback(const Stage& stage, const StageRun& r, uint16_t stage_index, uint64_t frame) {
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, EventKind::kBackendFallback);
  EXPECT_EQ(r.events[0].stage, stage_index);
  EXPECT_EQ(r.events[0].frame, frame);
  nlohmann::json body, st;
  stage.describe_event(r.events[0], body);
  EXPECT_EQ(body["state"], "fallback");
  // The runtime's name for the refused launch (cudaErrorInvalidValue or ...Configuration).
  EXPECT_EQ(body["error"].get<std::string>().rfind("cudaErrorInvalid", 0), 0u) << body.dump();
  stage.add_status(st);
  EXPECT_EQ(st["backend"], "cpu (fallback)");
  EXPECT_EQ(st["cuda_errors"], 1);
}

}  // namespace vigil::test
