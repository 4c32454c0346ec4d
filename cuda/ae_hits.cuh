// CUDA twin of dsp/AeHitDetector: the same per-sample state machine for every lane at once, one
// warp per lane or (long chunks) one warp per segment of a lane, state carried across calls in
// device memory; only hits and level intervals are written out. POD parameters and the launchers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "dsp/ae_hit_detector.hpp"

namespace vigil::cuda {

// What one warp of the segmented kernel leaves for the lane's repair pass (ae_hits_segmented.cu).
struct AeSegMeta {
  AeChannelState end;          // state after the segment, run from idle
  uint64_t first_above = 0;    // stream frame of the first |x| >= threshold; kNoneAbove if none
  double seg_sq = 0, seg_abs = 0;    // sums of x^2 and |x| over the segment
  double tail_sq = 0, tail_abs = 0;  // the same after its last level-interval end
  unsigned int hits = 0, levels = 0; // found (hits may exceed kAeSegHits: then it is run again)
};
constexpr uint64_t kNoneAbove = ~uint64_t(0);
constexpr uint32_t kAeSegHits = 8;       // hits a segment keeps
constexpr uint32_t kAeSegLevels = 4;     // level-interval ends a segment keeps (bounds the interval)
constexpr uint32_t kAeSegMinFrames = 2048;  // the shortest segment (a multiple of 256; 512 measured slower)
constexpr uint32_t kAeSegTargetWarps = 8192;   // enough segments to fill a large GPU, no more
// More lanes than this fill an H100's 528 warp schedulers with one warp per lane already: there
// the segmented kernel measured slower (800 lanes: 1.23 against 1.07 ms a 65536-frame chunk).
constexpr uint32_t kAeSegMaxLanes = 256;

// Samples per segment for a call of `frames` on `lanes`: kAeSegMinFrames, or longer (a multiple of
// 256) so that lanes x segments stays near kAeSegTargetWarps.
uint32_t ae_seg_frames(uint32_t frames, uint32_t lanes) noexcept;

// Scratch of the segmented kernel: `capacity` segments in all (device memory).
struct AeSegScratch {
  AeSegMeta* d_meta = nullptr;
  AeHit* d_hits = nullptr;      // kAeSegHits per segment
  AeLevel* d_levels = nullptr;  // kAeSegLevels per segment
  uint32_t capacity = 0;
};

// Segments the scratch for calls of up to max_frames on `lanes` needs (0: none run segmented).
uint32_t ae_seg_capacity(uint32_t max_frames, uint32_t lanes) noexcept;

// Whether a call of `frames` samples runs segmented: at most kAeSegMaxLanes lanes, at least two
// segments per lane, a fixed
// threshold (a floating one depends on the previous window), level intervals no shorter than a
// segment can keep, and scratch for all its segments.
bool ae_segmented_fits(const AeSampleParams& p, uint32_t frames, uint32_t lanes, uint32_t capacity) noexcept;

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
  unsigned int* d_counts = nullptr;  // hits, levels; segmented: segments closed form, taken, run again
  AeSegScratch seg;                // optional: long chunks split over many warps
};

// Enqueues one call on `stream`: segmented where ae_segmented_fits, else one warp per lane. The
// hits and levels are the same either way (only the order of double additions in the sums may
// differ). cudaErrorInvalidValue for parameters out of range.
cudaError_t launch_ae_hits(const AeHitsParams& k, cudaStream_t stream);
cudaError_t launch_ae_hits_segmented(const AeHitsParams& k, cudaStream_t stream);

// A chunk's small bookkeeping by kernels rather than the copy engines, where another stream's
// bulk copy (a stage's input history: tens of MB a chunk at hundreds of lanes) would hold a
// memset or a copy up for as long as it runs: the counts zeroed; the counts and the lanes' state
// written to page-locked, mapped host memory (the device aliases of those buffers).
cudaError_t launch_ae_zero_counts(unsigned int* d_counts, unsigned n, cudaStream_t stream);
cudaError_t launch_ae_publish(const unsigned int* d_counts, unsigned int* host_counts, unsigned n_counts,
                              const AeChannelState* d_state, AeChannelState* host_state, uint32_t lanes,
                              cudaStream_t stream);

}  // namespace vigil::cuda
