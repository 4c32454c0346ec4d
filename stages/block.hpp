// Block: what flows between stages (planar float32, band-major), and the Exec context.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/stream_format.hpp"

namespace vigil {

struct EventRecord;
class RtLog;
template <typename T>
class SpscQueue;

// Lane (band b, channel c) is data + (b * channels + c) * stride, `frames` samples long.
struct Block {
  float* data = nullptr;
  size_t stride = 0;  // floats between lanes (>= frames)
  uint32_t frames = 0;
  uint32_t channels = 0;
  uint32_t bands = 0;
  float* lane(uint32_t band, uint32_t channel) const noexcept {
    return data + (size_t(band) * channels + channel) * stride;
  }
};

// Where a block sits in time, from its chunk's header.
struct ChunkInfo {
  uint64_t first_frame = 0;
  int64_t t_first_utc_ns = 0;
  uint64_t sequence = 0;
};

// Everything process() may use besides its blocks.
struct Exec {
  ChunkInfo chunk;
  SpscQueue<EventRecord>* events = nullptr;  // detectors push here (never block)
  std::atomic<uint64_t>* events_dropped = nullptr;  // bumped when `events` is full
  RtLog* log = nullptr;  // journal lines from the pipeline thread (rare: errors), may be null
  // The chunk's interleaved samples as captured, when the graph takes its input raw
  // (Graph::take_raw_input): the stage reading the input converts them on the GPU, and the input
  // block is not filled on the host.
  const void* raw_input = nullptr;
};

}  // namespace vigil
