// Lanes into a ring, by a kernel: the newest frames of each lane of a device block written into a
// ring of `ring_frames` frames per lane (lane l at ring + l * ring_frames) from the position a
// cell holds, wrapping at the ring's end. The ring and the cell may be page-locked host memory
// mapped into the device: a CUDA stage's input history (stages/staged_input_history.hpp)
// written this way needs no copy whose destination changes from chunk to chunk, so it can be
// part of a replayed CUDA graph; the host sets the cell before each launch. POD parameters and
// the launcher; no framework types.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

struct LanesToRingParams {
  const float* d_src = nullptr;   // lane l at d_src + l * src_stride
  size_t src_stride = 0;
  uint32_t first = 0;             // the first frame of each lane copied
  uint32_t frames = 0;            // how many: 1..ring_frames
  uint32_t lanes = 0;             // 1..2^24
  float* ring = nullptr;          // device-visible (mapped) ring: lanes x ring_frames
  uint32_t ring_frames = 0;
  const uint32_t* position = nullptr;  // device-visible cell: the ring frame the first one goes to (< ring_frames)
};

// Enqueues the copy on `stream`. Returns cudaErrorInvalidValue for parameters out of range and
// the launch error otherwise. Never synchronises unless VIGIL_CUDA_DEBUG_SYNC is defined.
cudaError_t launch_lanes_to_ring(const LanesToRingParams& p, cudaStream_t stream);

}  // namespace vigil::cuda
