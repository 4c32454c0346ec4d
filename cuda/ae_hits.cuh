// CUDA twin of dsp/AeHitDetector: the same per-sample state machine for every lane at once, one
// warp per lane, state carried across calls in device memory; only hits and level intervals
// are written out. POD parameters and the launcher.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "dsp/ae_hit_detector.hpp"

namespace vigil::cuda {

struct AeHitsParams {
  AeSampleParams p;
  const float* d_x = nullptr;      // lane l at d_x + l * stride, `frames` samples
  size_t stride = 0;
  uint32_t frames = 0;
  uint32_t lanes = 0;
  uint64_t first_frame = 0;        // stream frame of each lane's first sample
  AeChannelState* d_state = nullptr;  // lanes entries, read and written
  AeHit* d_hits = nullptr;         // capacity entries; d_counts[0] counts every hit found
  AeLevel* d_levels = nullptr;     // capacity entries; d_counts[1] counts every interval
  uint32_t capacity = 0;
  unsigned int* d_counts = nullptr;
};

// Enqueues one call on `stream`. cudaErrorInvalidValue for parameters out of range.
cudaError_t launch_ae_hits(const AeHitsParams& k, cudaStream_t stream);

}  // namespace vigil::cuda
