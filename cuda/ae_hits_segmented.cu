// The AE hit engine over many warps per lane. One warp per lane (ae_hits.cu) walks a 65536-frame
// chunk in 2048 serial steps: with 16 lanes the GPU is nearly idle and a chunk takes ~0.6 ms.
// Here each lane's chunk is cut into segments (ae_seg_frames: 2048 samples, or more where there
// are many lanes) and two kernels run:
//
// 1. Every segment at once, one warp each, run from the idle state (a guess: the true state at
//    the segment's start depends on the segments before). Each keeps its hits, its level-interval
//    pieces, its end state, its first above-threshold sample and its sums of x^2 and |x|.
// 2. One warp per lane goes through its segments in order with the true state and decides, per
//    segment, in closed form where it can:
//    - nothing above threshold in the segment, or a lockout lasting past it: an open hit closes
//      where HDT or the maximum duration runs out (the same rule as ae_step's gaps) or takes the
//      segment's sums; a lockout runs on; no hit can start.
//    - else, if the true state is idle by the first above-threshold sample (idle, or a lockout
//      that has ended by then, including one that began where an open hit closed just before):
//      the guess was right from the start, and the segment's hits and end state are taken as
//      they are;
//    - else (a hit still open when samples rise above threshold again, a lockout that ends after
//      that, or more hits than a segment keeps) the segment is run again with the true state.
//    Level intervals are completed from the segments' pieces.
//
// With bursts far apart (S1: a few per chunk) only the segments where a burst goes on from the
// segment before run twice. Steps keep the same 32-sample alignment as ae_hits.cu, so decisions
// and hit sums are the same; only the sums over a quiet segment and the level sums add in another
// order.
#include "cuda/ae_hits.cuh"
#include "cuda/ae_hits_step.cuh"
#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

using namespace ae_device;

__global__ void ae_segments_kernel(AeHitsParams k, uint32_t seg_frames, uint32_t segs) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t w = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (w >= size_t(k.lanes) * segs) return;  // whole warps only
  const auto channel = uint32_t(w / segs), seg = uint32_t(w % segs);
  const uint32_t from = seg * seg_frames;
  const uint32_t to = from + seg_frames < k.frames ? from + seg_frames : k.frames;
  const float* x = k.d_x + size_t(channel) * k.stride;
  AeSegMeta* meta = k.seg.d_meta + w;
  AeChannelState s = k.d_state[channel];
  s.phase = AeChannelState::kIdle;
  if (seg) s.prev = x[from - 1];
  LaneSums ls;
  if (k.p.level_interval) ls.level_pos = uint32_t((k.first_frame + from) % k.p.level_interval);
  if (lane == 0) {
    meta->hits = 0;
    meta->levels = 0;
  }
  __syncwarp();
  const AeSink sink{k.seg.d_hits + w * kAeSegHits, &meta->hits, kAeSegHits,
                    k.seg.d_levels + w * kAeSegLevels, &meta->levels, kAeSegLevels};
  const float thr = s.threshold;  // fixed (ae_segmented_fits)
  uint64_t first_above = kNoneAbove;
  double sq = 0, ab = 0;
  ae_walk(k.p, sink, s, ls, x, from, to, k.first_frame, lane, channel, [&](float v, uint64_t n0, unsigned count) {
    const bool valid = lane < count;
    const unsigned m = __ballot_sync(kFull, valid && fabsf(v) >= thr);
    if (m && first_above == kNoneAbove) first_above = n0 + unsigned(__ffs(m) - 1);
    if (valid) {
      sq += double(v) * v;
      ab += double(fabsf(v));
    }
  });
  sq = warp_sum(sq);
  ab = warp_sum(ab);
  const double tail_sq = warp_sum(ls.level_sq), tail_abs = warp_sum(ls.level_abs);
  if (lane == 0) {
    meta->end = s;
    meta->first_above = first_above;
    meta->seg_sq = sq;
    meta->seg_abs = ab;
    meta->tail_sq = tail_sq;
    meta->tail_abs = tail_abs;
  }
}

__global__ void ae_join_kernel(AeHitsParams k, uint32_t seg_frames, uint32_t segs) {
  const unsigned lane = threadIdx.x & 31u;
  const uint32_t channel = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (channel >= k.lanes) return;
  const AeSampleParams& p = k.p;
  AeSampleParams p_rerun = p;
  p_rerun.level_interval = 0;  // the levels come from the segments' pieces
  const AeSink out{k.d_hits, &k.d_counts[0], k.capacity, k.d_levels, &k.d_counts[1], k.capacity};
  const float* x = k.d_x + size_t(channel) * k.stride;
  AeChannelState s = k.d_state[channel];
  double carry_sq = s.level_sq, carry_abs = s.level_abs;
  // The segments' small results, 32 segments at a time: lane j fetches segment g + j's, and the
  // walk through them broadcasts each in turn (one memory latency per 32 segments, not per one).
  for (uint32_t g = 0; g < segs; g += 32) {
    uint64_t fa_j = kNoneAbove;
    unsigned hits_j = 0, levels_j = 0;
    double sq_j = 0, ab_j = 0, tsq_j = 0, tab_j = 0;
    float prev_j = 0;
    if (g + lane < segs) {
      const AeSegMeta& m = k.seg.d_meta[size_t(channel) * segs + g + lane];
      fa_j = m.first_above;
      hits_j = m.hits;
      levels_j = m.levels;
      sq_j = m.seg_sq;
      ab_j = m.seg_abs;
      tsq_j = m.tail_sq;
      tab_j = m.tail_abs;
      prev_j = m.end.prev;
    }
    const uint32_t n = segs - g < 32 ? segs - g : 32;
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t seg = g + j;
      const size_t w = size_t(channel) * segs + seg;
      const uint32_t from = seg * seg_frames;
      const uint32_t to = from + seg_frames < k.frames ? from + seg_frames : k.frames;
      const uint64_t end = k.first_frame + to;  // one past the segment's last frame
      const uint64_t fa = __shfl_sync(kFull, fa_j, j);
      const unsigned hits = __shfl_sync(kFull, hits_j, j), levels = __shfl_sync(kFull, levels_j, j);

      // Level intervals ending here: the first completes the one carried in.
      for (unsigned r = 0; r < levels; ++r) {
        AeLevel v = k.seg.d_levels[w * kAeSegLevels + r];
        if (r == 0) {
          v.sum_sq += carry_sq;
          v.sum_abs += carry_abs;
        }
        emit_level(out, v, lane);
      }
      carry_sq = (levels ? 0.0 : carry_sq) + __shfl_sync(kFull, tsq_j, j);
      carry_abs = (levels ? 0.0 : carry_abs) + __shfl_sync(kFull, tab_j, j);

      if (s.phase == AeChannelState::kHit) {  // closes in the quiet stretch before fa?
        const uint64_t c = ae_close_point(p, s.hit);
        if (c < (fa == kNoneAbove ? end : fa)) ae_close_hit(p, out, s, c, lane);
      }
      // A lockout lasting past the segment ignores whatever rises in it (a burst arriving then).
      const bool locked_out = s.phase == AeChannelState::kLockout && s.lockout_end >= end;
      const unsigned how = fa == kNoneAbove || locked_out ? 0
                           : s.phase == AeChannelState::kHit ||
                                     (s.phase == AeChannelState::kLockout && s.lockout_end > fa) || hits > kAeSegHits
                               ? 2
                               : 1;
      if (lane == 0) atomicAdd(&k.d_counts[2 + how], 1u);
      if (how == 0) {  // nothing starts or extends a hit here
        if (s.phase == AeChannelState::kHit) {
          s.run_sq += __shfl_sync(kFull, sq_j, j);
          s.run_abs += __shfl_sync(kFull, ab_j, j);
        } else if (s.phase == AeChannelState::kLockout && end - 1 >= s.lockout_end) {
          s.phase = AeChannelState::kIdle;
        }
        s.prev = __shfl_sync(kFull, prev_j, j);
      } else if (how == 2) {  // a hit open or a lockout running when samples rise again, or too many hits
        LaneSums ls;  // no floating window, no level interval in p_rerun: only the hit's shares
        ae_walk(p_rerun, out, s, ls, x, from, to, k.first_frame, lane, channel, [](float, uint64_t, unsigned) {});
      } else {  // idle at fa as the guess was: its hits and end state are the lane's
        for (unsigned i = 0; i < hits; ++i) emit_hit(out, k.seg.d_hits[w * kAeSegHits + i], lane);
        s = k.seg.d_meta[w].end;
      }
    }
  }
  s.level_sq = carry_sq;
  s.level_abs = carry_abs;
  if (lane == 0) k.d_state[channel] = s;
}

}  // namespace

uint32_t ae_seg_frames(uint32_t frames, uint32_t lanes) noexcept {
  const uint64_t even = (uint64_t(frames) * lanes + kAeSegTargetWarps - 1) / kAeSegTargetWarps;
  const uint64_t len = (even + 255) / 256 * 256;
  return len < kAeSegMinFrames ? kAeSegMinFrames : uint32_t(len < frames ? len : frames);
}

uint32_t ae_seg_capacity(uint32_t max_frames, uint32_t lanes) noexcept {
  if (max_frames < 2 * kAeSegMinFrames || lanes > kAeSegMaxLanes) return 0;
  // Shorter calls may take shorter segments: the most any call up to max_frames can need.
  uint64_t most = 0;
  for (uint32_t f = max_frames; f >= 2 * kAeSegMinFrames; f = f / 2) {
    const uint32_t len = ae_seg_frames(f, lanes);
    const uint64_t segs = uint64_t(lanes) * ((f + len - 1) / len);
    most = segs > most ? segs : most;
  }
  const uint64_t cap = uint64_t(lanes) * (uint64_t(kAeSegTargetWarps) / lanes + 2);
  return uint32_t(most < cap ? most : cap);
}

bool ae_segmented_fits(const AeSampleParams& p, uint32_t frames, uint32_t lanes, uint32_t capacity) noexcept {
  if (frames < 2 * kAeSegMinFrames || lanes > kAeSegMaxLanes || p.floating_window) return false;
  const uint32_t len = ae_seg_frames(frames, lanes);
  if (uint64_t(lanes) * ((frames + len - 1) / len) > capacity || (frames + len - 1) / len < 2) return false;
  // A segment of len samples holds at most (len - 1) / L + 1 interval ends.
  return p.level_interval == 0 || (len - 1) / p.level_interval + 1 <= kAeSegLevels;
}

cudaError_t launch_ae_hits_segmented(const AeHitsParams& k, cudaStream_t stream) {
  if (!ae_segmented_fits(k.p, k.frames, k.lanes, k.seg.capacity) || !k.seg.d_meta || !k.seg.d_hits ||
      !k.seg.d_levels)
    return cudaErrorInvalidValue;
  const uint32_t seg_frames = ae_seg_frames(k.frames, k.lanes);
  const uint32_t segs = (k.frames + seg_frames - 1) / seg_frames;
  constexpr unsigned kThreads = 128;  // 4 segments per block
  const size_t threads = size_t(k.lanes) * segs * 32;
  ae_segments_kernel<<<unsigned((threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(k, seg_frames, segs);
  if (const cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess) return e;
  constexpr unsigned kJoinThreads = 64;  // few lanes: spread them over the SMs
  ae_join_kernel<<<(k.lanes * 32 + kJoinThreads - 1) / kJoinThreads, kJoinThreads, 0, stream>>>(k, seg_frames, segs);
  return after_launch(stream);
}

}  // namespace vigil::cuda
