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
  std::vector<std::vector<float>> data;  // per data output: bands x channels lanes, `stride` apart
  size_t stride = 0;                     // floats between lanes (= max frames)
};

}  // namespace vigil
