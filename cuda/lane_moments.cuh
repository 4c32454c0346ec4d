// Per-lane moments of a chunk on the GPU, the twin of dsp/moments_of(): for every lane and every
// run the chunk is cut into (the same cut for every lane: the vibration stage's segment ends),
// the count, mean, central sums M2..M4, min and max, summed in double about the run's first
// sample as the CPU does. Only these few numbers per lane and run cross to the host, where
// dsp/merge() and stats_of() turn them into window statistics (RMS, peak, crest, kurtosis).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "dsp/window_moments.hpp"

namespace vigil::cuda {

// Run r of every lane is [start[r], start[r + 1]), 1 <= runs <= kMaxRuns, each non-empty.
struct RunSplit {
  static constexpr uint32_t kMaxRuns = 64;
  uint32_t runs = 0;
  uint32_t start[kMaxRuns + 1] = {};
};

// d_out[l * split.runs + r] = moments_of(lane l's run r), lane l at d_x + l * stride, l < lanes.
// Enqueued on `stream`; cudaErrorInvalidValue for a split out of range.
cudaError_t launch_lane_moments(const float* d_x, size_t stride, uint32_t lanes, const RunSplit& split,
                                Moments* d_out, cudaStream_t stream) noexcept;

// Whether `split` is one launch_lane_moments() takes.
inline bool valid_split(const RunSplit& split) noexcept {
  if (split.runs == 0 || split.runs > RunSplit::kMaxRuns) return false;
  for (uint32_t r = 0; r < split.runs; ++r)
    if (split.start[r + 1] <= split.start[r]) return false;
  return true;
}

// The same for a split of `runs` runs whose starts the kernel reads when it runs, from d_starts
// (runs + 1 of them, as RunSplit::start): one launch can be captured in a graph and replayed for
// every chunk cut into that many runs, the starts written before each replay (valid_split's rules:
// the caller checks them). Put d_starts in device memory, filled by a copy from a page-locked cell
// captured in the same graph: read across the bus from mapped host memory, the two loads each
// block makes took the kernel from 12 to 270 us (S2's 256 lanes, H200, 2026-11-26).
cudaError_t launch_lane_moments_from_cell(const float* d_x, size_t stride, uint32_t lanes, uint32_t runs,
                                          const uint32_t* d_starts, Moments* d_out, cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
