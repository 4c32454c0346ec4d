// The per-step state machine of the CUDA AE hit engine, shared by the one-warp-per-lane kernel
// (ae_hits.cu) and the segmented one (ae_hits_segmented.cu). Device code only.
//
// One warp per lane walks its samples 32 at a time (lane j holds sample base + j). Everything a
// sample's decision needs that does not depend on the hit state (threshold in force, |x| >=
// threshold, positive-going crossing) is computed by all lanes at once; the state machine then
// visits only the samples above threshold, in order, and settles the gaps between them in closed
// form (a hit closes where HDT or the maximum duration runs out; sums come from a prefix scan, or
// over whole steps below threshold from per-lane shares reduced when next needed). The state is
// identical in every lane of the warp (it changes only through ballots, broadcasts and
// xor-butterfly sums, which give every lane the same bits), so every branch on it is warp-uniform.
// Decisions match the CPU sample for sample; only the order of the double additions in the sums
// differs.
#pragma once

#include "cuda/ae_hits.cuh"

namespace vigil::cuda::ae_device {


constexpr unsigned kFull = 0xFFFFFFFFu;

__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

__device__ __forceinline__ double warp_inclusive_scan(double v, unsigned lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const double u = __shfl_up_sync(kFull, v, o);
    if (lane >= unsigned(o)) v += u;
  }
  return v;
}

// Where hits and level intervals go: the caller's lists, or a segment's own (ae_hits_segmented).
struct AeSink {
  AeHit* hits;
  unsigned int* hit_count;  // counts every hit, also those beyond hit_cap
  uint32_t hit_cap;
  AeLevel* levels;
  unsigned int* level_count;
  uint32_t level_cap;
};

__device__ __forceinline__ void emit_hit(const AeSink& o, const AeHit& h, unsigned lane) {
  if (lane != 0) return;
  const unsigned i = atomicAdd(o.hit_count, 1u);
  if (i < o.hit_cap) o.hits[i] = h;
}

__device__ __forceinline__ void emit_level(const AeSink& o, const AeLevel& v, unsigned lane) {
  if (lane != 0) return;
  const unsigned i = atomicAdd(o.level_count, 1u);
  if (i < o.level_cap) o.levels[i] = v;
}

// Where an open hit closes unless a sample above threshold comes first: the sample HDT after its
// last crossing, or the one the maximum duration after its arrival, whichever is sooner.
__device__ __forceinline__ uint64_t ae_close_point(const AeSampleParams& p, const AeHit& h) {
  const uint64_t by_hdt = h.end_frame + p.hdt + 1, by_max = h.arrival_frame + p.max_duration;
  return by_hdt < by_max ? by_hdt : by_max;
}

// Closes the open hit at c = ae_close_point(): emitted (truncated when the maximum duration ran out
// first), then the lockout, which ends HLT after c.
__device__ __forceinline__ void ae_close_hit(const AeSampleParams& p, const AeSink& k, AeChannelState& s, uint64_t c,
                                             unsigned lane) {
  s.hit.truncated = c < s.hit.end_frame + p.hdt + 1;
  emit_hit(k, s.hit, lane);
  s.phase = AeChannelState::kLockout;
  s.lockout_end = c + p.hlt;
}

// Samples of one step: lane j holds sample n0 + j (valid when j < count).
// Running sums of the floating-threshold window and the level interval are kept per lane (each
// lane's share) and reduced across the warp only where an interval ends: the common step has no
// reduction at all.
struct LaneSums {
  double noise = 0, level_sq = 0, level_abs = 0;
  // An open hit's sums over the steps below threshold since it last took a sample, per lane:
  // reduced into AeChannelState::run_sq/run_abs only when the hit takes a sample again, and by
  // ae_walk at its end.
  double run_sq = 0, run_abs = 0;
  // Position of the step's first sample within the floating window and the level interval
  // (n mod W, n mod L), advanced by addition: no 64-bit division per step.
  uint32_t window_pos = 0, level_pos = 0;
};

__device__ __forceinline__ void ae_step(const AeSampleParams& p, const AeSink& k, AeChannelState& s, LaneSums& ls,
                                        float v, uint64_t n0, unsigned count, unsigned lane, uint32_t channel) {
  const bool valid = lane < count;
  const float a = fabsf(v);
  float prev = __shfl_up_sync(kFull, v, 1);
  if (lane == 0) prev = s.prev;

  // Threshold in force at each sample: a floating window ending at lane kb changes it after kb.
  float thr = s.threshold;
  if (p.floating_window) {
    const uint32_t to_end = p.floating_window - 1 - ls.window_pos;  // lanes before the window's last
    ls.window_pos += count;
    if (ls.window_pos >= p.floating_window) ls.window_pos -= p.floating_window;
    if (to_end < count) {
      const unsigned kb = to_end;
      const double head = warp_sum(ls.noise + (valid && lane <= kb ? double(a) : 0.0));
      const float next = ae_floating_threshold(p, head / p.floating_window);
      if (lane > kb) thr = next;
      s.threshold = next;
      ls.noise = valid && lane > kb ? double(a) : 0.0;
    } else {
      ls.noise += valid ? double(a) : 0.0;
    }
  }
  if (p.level_interval) {
    const double sq = valid ? double(v) * v : 0.0, ab = valid ? double(a) : 0.0;
    const uint32_t to_end = p.level_interval - 1 - ls.level_pos;
    ls.level_pos += count;
    if (ls.level_pos >= p.level_interval) ls.level_pos -= p.level_interval;
    if (to_end < count) {
      const unsigned kb = to_end;
      const double head_sq = warp_sum(ls.level_sq + (lane <= kb ? sq : 0.0));
      const double head_ab = warp_sum(ls.level_abs + (lane <= kb ? ab : 0.0));
      emit_level(k, AeLevel{channel, n0 + kb, head_sq, head_ab, p.level_interval}, lane);
      ls.level_sq = lane > kb ? sq : 0.0;
      ls.level_abs = lane > kb ? ab : 0.0;
    } else {
      ls.level_sq += sq;
      ls.level_abs += ab;
    }
  }

  // A lockout that lasts past the step: samples above threshold change nothing (a burst that
  // arrives during the lockout would otherwise be visited sample by sample below).
  if (s.phase == AeChannelState::kLockout && s.lockout_end >= n0 + count) {
    s.prev = __shfl_sync(kFull, v, count - 1);
    return;
  }
  const bool above = valid && a >= thr;
  const bool rising = valid && v >= thr && prev < thr;
  unsigned mask = __ballot_sync(kFull, above);
  const unsigned rmask = __ballot_sync(kFull, rising);
  const float last = __shfl_sync(kFull, v, count - 1);

  if (s.phase == AeChannelState::kHit && !mask) {
    // A step below threshold in an open hit (HDT is hundreds of steps): it closes here, or the
    // step's sums join the lanes' shares. No shuffle.
    const uint64_t c = ae_close_point(p, s.hit);
    if (c < n0 + count) {
      ae_close_hit(p, k, s, c, lane);
      ls.run_sq = ls.run_abs = 0;
    } else if (valid) {
      ls.run_sq += double(v) * v;
      ls.run_abs += double(a);
    }
  } else if (s.phase == AeChannelState::kHit || mask) {
    if (s.phase == AeChannelState::kHit) {  // the shares of the steps below threshold before
      s.run_sq += warp_sum(ls.run_sq);
      s.run_abs += warp_sum(ls.run_abs);
      ls.run_sq = ls.run_abs = 0;
    }
    // Inclusive prefix sums of x^2 and |x| over the step.
    const double psq = warp_inclusive_scan(valid ? double(v) * v : 0.0, lane);
    const double pab = warp_inclusive_scan(valid ? double(a) : 0.0, lane);
    unsigned pos = 0;  // first lane not yet visited
    for (;;) {
      const unsigned end = mask ? unsigned(__ffs(mask) - 1) : count;
      // Lanes pos..end-1 are all below threshold: the open hit may only close there.
      if (s.phase == AeChannelState::kHit && end > pos) {
        const uint64_t c = ae_close_point(p, s.hit);
        if (c < n0 + end) {
          ae_close_hit(p, k, s, c, lane);
        } else {
          const double sq_end = __shfl_sync(kFull, psq, end - 1), ab_end = __shfl_sync(kFull, pab, end - 1);
          const double sq_pos = pos ? __shfl_sync(kFull, psq, pos - 1) : 0.0;
          const double ab_pos = pos ? __shfl_sync(kFull, pab, pos - 1) : 0.0;
          s.run_sq += sq_end - sq_pos;
          s.run_abs += ab_end - ab_pos;
        }
      }
      if (!mask) break;
      // Bulk: an open hit that cannot close in the rest of the step (HDT and the maximum
      // duration both run out beyond it) and whose peak cannot lock there takes every remaining
      // lane at once: the same decisions as visiting them one by one.
      if (s.phase == AeChannelState::kHit) {
        const uint64_t n_last = n0 + count - 1;
        const bool no_close = s.hit.end_frame + p.hdt >= n_last && s.hit.arrival_frame + p.max_duration > n_last;
        const bool no_lock = s.peak_locked || n_last - s.hit.peak_frame <= p.pdt;
        if (no_close && no_lock) {
          const unsigned last_above = 31u - unsigned(__clz(mask));
          // Lanes before `end` are visited or summed (the gap above); `end` is the first above.
          const unsigned before = end ? (1u << end) - 1u : 0u;
          const unsigned rising_rest = rmask & ~before;
          const double sq_pos = end ? __shfl_sync(kFull, psq, end - 1) : 0.0;
          const double ab_pos = end ? __shfl_sync(kFull, pab, end - 1) : 0.0;
          const double sq_last = __shfl_sync(kFull, psq, last_above), ab_last = __shfl_sync(kFull, pab, last_above);
          const double sq_end = __shfl_sync(kFull, psq, count - 1), ab_end = __shfl_sync(kFull, pab, count - 1);
          if (!s.peak_locked) {
            // The largest |x| among the remaining above-threshold lanes, at its first lane.
            float m = (mask >> lane) & 1u ? a : -1.0f;
            for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(kFull, m, o));
            if (m > s.hit.peak) {
              const unsigned at = unsigned(__ffs(__ballot_sync(kFull, ((mask >> lane) & 1u) && a == m)) - 1);
              s.hit.peak = m;
              s.hit.peak_frame = n0 + at;
              s.hit.counts_to_peak = s.hit.counts + unsigned(__popc(rising_rest & (at == 31 ? kFull : (2u << at) - 1u)));
            }
          }
          s.hit.counts += unsigned(__popc(rising_rest));
          s.hit.end_frame = n0 + last_above;
          s.hit.sum_sq = s.run_sq + (sq_last - sq_pos);
          s.hit.sum_abs = s.run_abs + (ab_last - ab_pos);
          s.run_sq += sq_end - sq_pos;
          s.run_abs += ab_end - ab_pos;
          break;
        }
      }
      // Lane `end` is above threshold: the CPU's per-sample steps (dsp/ae_hit_detector.hpp), shared.
      const unsigned j = end;
      const float vj = __shfl_sync(kFull, v, j);
      const float aj = fabsf(vj);
      const uint64_t nj = n0 + j;
      const bool rj = (rmask >> j) & 1u;
      const float thr_j = __shfl_sync(kFull, thr, j);
      ae_close_if_due(p, s, nj, [&](const AeHit& h) { emit_hit(k, h, lane); });
      if (s.phase == AeChannelState::kIdle) {
        ae_open_hit(s, channel, nj, vj, aj, thr_j, rj);
      } else if (s.phase == AeChannelState::kHit) {
        s.run_sq += double(vj) * vj;
        s.run_abs += aj;
        ae_hit_takes_above(p, s, nj, aj, rj);
      }
      pos = j + 1;
      mask &= mask - 1;
    }
  }
  if (s.phase == AeChannelState::kLockout && n0 + count - 1 >= s.lockout_end) s.phase = AeChannelState::kIdle;
  s.prev = last;
}

// Eight steps (n <= 256 samples from stream frame n0, v[u] lane j = sample 32u + j) at once when
// nothing in them can change the state machine's course: no sample above threshold (or a lockout
// lasting past them), no floating window or level interval ending, an open hit that cannot close. The lanes' sums then take the
// samples in the order ae_step would add them, so the result is the same to the bit. Returns
// false, having changed nothing, when the steps must be taken one by one.
__device__ __forceinline__ bool ae_quiet_block(const AeSampleParams& p, AeChannelState& s, LaneSums& ls,
                                               const float (&v)[8], uint64_t n0, unsigned n, unsigned lane) {
  if (p.floating_window && p.floating_window - 1 - ls.window_pos < n) return false;
  if (p.level_interval && p.level_interval - 1 - ls.level_pos < n) return false;
  // In a lockout that lasts past the block, samples above threshold change nothing either.
  if (s.phase != AeChannelState::kLockout || s.lockout_end < n0 + n) {
    bool above = false;
#pragma unroll
    for (unsigned u = 0; u < 8; ++u) above |= 32 * u + lane < n && fabsf(v[u]) >= s.threshold;
    if (__any_sync(kFull, above)) return false;
  }
  const bool hit = s.phase == AeChannelState::kHit;
  if (hit && ae_close_point(p, s.hit) < n0 + n) return false;
  float last = 0;
#pragma unroll
  for (unsigned u = 0; u < 8; ++u) {
    if (32 * u + lane < n) {
      const float a = fabsf(v[u]);
      if (p.floating_window) ls.noise += double(a);
      if (p.level_interval) {
        ls.level_sq += double(v[u]) * v[u];
        ls.level_abs += double(a);
      }
      if (hit) {
        ls.run_sq += double(v[u]) * v[u];
        ls.run_abs += double(a);
      }
    }
    if (u == (n - 1) / 32) last = v[u];
  }
  ls.window_pos += n;  // no wrap: no window or interval ends in the block
  ls.level_pos += n;
  if (s.phase == AeChannelState::kLockout && n0 + n - 1 >= s.lockout_end) s.phase = AeChannelState::kIdle;
  s.prev = __shfl_sync(kFull, last, (n - 1) & 31u);
  return true;
}

// Eight steps (n <= 256 samples from stream frame n0, v[u] lane j = sample 32u + j) at once inside
// an open hit that cannot close or lock its peak in them: HDT and the maximum duration both run
// out beyond the block, and the peak is locked or the block ends within PDT of it, so no sample
// can lock it (a new peak only moves it later). No floating window or level interval may end in
// the block. Then every sample's decisions follow from ballots taken at once: counts, the last
// crossing, the largest |x| above threshold (at its first sample) and the sums up to that
// crossing. A burst's body (S1: thousands of samples above threshold, HDT after the last) costs one
// dependency chain per 256 samples here instead of eight. Returns false, having changed nothing,
// when the steps must be taken one by one.
__device__ __forceinline__ bool ae_busy_block(const AeSampleParams& p, AeChannelState& s, LaneSums& ls,
                                              const float (&v)[8], uint64_t n0, unsigned n, unsigned lane) {
  if (s.phase != AeChannelState::kHit) return false;
  if (p.floating_window && p.floating_window - 1 - ls.window_pos < n) return false;
  if (p.level_interval && p.level_interval - 1 - ls.level_pos < n) return false;
  if (ae_close_point(p, s.hit) < n0 + n) return false;
  const bool may_peak = !s.peak_locked;
  if (may_peak && n0 + n - 1 - s.hit.peak_frame > p.pdt) return false;
  const float thr = s.threshold;  // no window ends in the block
  unsigned above[8], rising[8];
  float best = -1.0f;  // the lane's largest |x| above threshold
#pragma unroll
  for (unsigned u = 0; u < 8; ++u) {
    const bool valid = 32 * u + lane < n;
    float prev = __shfl_up_sync(kFull, v[u], 1);  // lane 0: the step before's last, or s.prev
    const float before = u ? __shfl_sync(kFull, v[u ? u - 1 : 0], 31) : s.prev;
    if (lane == 0) prev = before;
    const float a = fabsf(v[u]);
    const bool ab = valid && a >= thr;
    above[u] = __ballot_sync(kFull, ab);
    rising[u] = __ballot_sync(kFull, valid && v[u] >= thr && prev < thr);
    if (ab && a > best) best = a;
  }
  // The last sample above threshold in the block (none: the hit only takes the sums).
  int last_u = -1;
#pragma unroll
  for (int u = 7; u >= 0; --u)
    if (last_u < 0 && above[u]) last_u = u;
  const unsigned last = last_u < 0 ? 0u : 32u * unsigned(last_u) + 31u - unsigned(__clz(above[last_u]));
  double upto_sq = ls.run_sq, upto_ab = ls.run_abs, rest_sq = 0, rest_ab = 0;
  float last_v = 0;
#pragma unroll
  for (unsigned u = 0; u < 8; ++u) {
    const unsigned i = 32 * u + lane;
    if (i < n) {
      const double sq = double(v[u]) * v[u], ab = double(fabsf(v[u]));
      if (p.floating_window) ls.noise += ab;
      if (p.level_interval) {
        ls.level_sq += sq;
        ls.level_abs += ab;
      }
      if (last_u >= 0 && i <= last) {
        upto_sq += sq;
        upto_ab += ab;
      } else {
        rest_sq += sq;
        rest_ab += ab;
      }
    }
    if (u == (n - 1) / 32) last_v = v[u];
  }
  ls.window_pos += n;  // no wrap: no window or interval ends in the block
  ls.level_pos += n;
  s.prev = __shfl_sync(kFull, last_v, (n - 1) & 31u);
  if (last_u < 0) {  // below threshold throughout: the lanes' shares take it, as in ae_quiet_block
    ls.run_sq = upto_sq + rest_sq;
    ls.run_abs = upto_ab + rest_ab;
    return true;
  }
  unsigned counts_before[8], counted = 0;
#pragma unroll
  for (unsigned u = 0; u < 8; ++u) {
    counts_before[u] = counted;
    counted += unsigned(__popc(rising[u]));
  }
  if (may_peak) {
    float m = best;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(kFull, m, o));
    if (m > s.hit.peak) {  // its first sample: the first step holding it, the lowest lane there
      unsigned at = 0, at_u = 0;
      bool found = false;
#pragma unroll
      for (unsigned u = 0; u < 8; ++u) {
        const unsigned b = __ballot_sync(kFull, ((above[u] >> lane) & 1u) && fabsf(v[u]) == m);
        if (!found && b) {
          found = true;
          at_u = u;
          at = unsigned(__ffs(b) - 1);
        }
      }
      s.hit.peak = m;
      s.hit.peak_frame = n0 + 32 * at_u + at;
      unsigned upto_at = 0;
#pragma unroll
      for (unsigned u = 0; u < 8; ++u)
        if (u == at_u) upto_at = counts_before[u] + unsigned(__popc(rising[u] & (at == 31 ? kFull : (2u << at) - 1u)));
      s.hit.counts_to_peak = s.hit.counts + upto_at;
    }
  }
  s.hit.counts += counted;
  s.hit.end_frame = n0 + last;
  s.run_sq += warp_sum(upto_sq);
  s.run_abs += warp_sum(upto_ab);
  s.hit.sum_sq = s.run_sq;
  s.hit.sum_abs = s.run_abs;
  ls.run_sq = rest_sq;
  ls.run_abs = rest_ab;
  return true;
}

// Walks samples [from, to) of lane x (x[0] is stream frame first_frame; from is a multiple of 32
// and to - from steps of 32, the last partial) through ae_step, eight steps' loads in flight, and
// eight quiet steps, or eight steps of an open hit that cannot close in them, at once;
// on_step(v, n0, count) sees every step's samples first.
template <typename OnStep>
__device__ __forceinline__ void ae_walk(const AeSampleParams& p, const AeSink& sink, AeChannelState& s, LaneSums& ls,
                                        const float* x, uint32_t from, uint32_t to, uint64_t first_frame,
                                        unsigned lane, uint32_t channel, OnStep&& on_step) {
  constexpr unsigned kUnroll = 8;
  for (uint32_t base = from; base < to; base += 32 * kUnroll) {
    float v[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const uint32_t i = base + 32 * u + lane;
      v[u] = i < to ? x[i] : 0.0f;
    }
    const unsigned n = to - base < 32 * kUnroll ? to - base : 32 * kUnroll;
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const uint32_t b = base + 32 * u;
      if (b >= to) break;
      on_step(v[u], first_frame + b, to - b < 32 ? to - b : 32);
    }
    if (ae_quiet_block(p, s, ls, v, first_frame + base, n, lane)) continue;
    if (ae_busy_block(p, s, ls, v, first_frame + base, n, lane)) continue;
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const uint32_t b = base + 32 * u;
      if (b >= to) break;
      const unsigned count = to - b < 32 ? to - b : 32;
      ae_step(p, sink, s, ls, v[u], first_frame + b, count, lane, channel);
    }
  }
  if (s.phase == AeChannelState::kHit) {  // the state complete for whoever reads it next
    s.run_sq += warp_sum(ls.run_sq);
    s.run_abs += warp_sum(ls.run_abs);
  }
  ls.run_sq = ls.run_abs = 0;
}

}  // namespace vigil::cuda::ae_device
