// OutputSlot: one processed chunk's sample streams and header, handed from the pipeline thread
// to the output thread. Preallocated at start; recycled through a free queue.
#pragma once

#include <cstdint>
#include <vector>

#include "acquisition/chunk.hpp"

namespace vigil {

struct OutputSlot {
  ChunkHeader header;                    // of the chunk these streams came from
  uint32_t frames = 0;
  int64_t t_processed_mono_ns = 0;
  int64_t t_dequeued_mono_ns = 0;        // when the pipeline thread took the chunk
  int slowest_stage = -1;                // graph stage that took longest on it (deadline culprit)
  int64_t slowest_stage_ns = 0;
  // Per data output: bands x channels lanes, `stride` apart; for an output that decimates by N,
  // each lane holds only the kept samples (kept_samples()), from the lane's start.
  std::vector<std::vector<float>> data;
  size_t stride = 0;                     // floats between lanes (= max frames)
};

// A data output decimating by `dec` keeps the samples whose index in the stream is a multiple of
// it: the same ones whatever the chunking, and after a gap too (the index is the frame's). Of a
// chunk of `frames` from stream frame `first_frame`: the first kept (index in the chunk) and how many.
struct KeptSamples {
  uint32_t first = 0;
  uint32_t count = 0;
};
inline KeptSamples kept_samples(uint64_t first_frame, uint32_t frames, uint32_t dec) noexcept {
  const uint32_t i0 = uint32_t((dec - first_frame % dec) % dec);
  return {i0, i0 < frames ? (frames - i0 + dec - 1) / dec : 0u};
}

}  // namespace vigil
