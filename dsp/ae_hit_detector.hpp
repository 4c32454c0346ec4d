// AeHitDetector: the acoustic-emission hit engine (ASTM E1316 terms), per channel, streaming.
// A hit opens at the first sample with |x| >= threshold, takes its peak under the peak definition
// time (PDT), ends when the hit definition time (HDT) passes with no crossing (or at the maximum
// duration), and is followed by the hit lockout time (HLT) in which no hit may open. Every
// decision is a comparison of a float sample with a float threshold, so the CUDA twin
// (cuda/ae_hit_detector_cuda) finds the same hits sample for sample. Formulas: docs/PROTOCOL.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

// Shared with the CUDA twin: the few inline functions both backends call.
#if defined(__CUDACC__)
#define VIGIL_HOST_DEVICE __host__ __device__
#else
#define VIGIL_HOST_DEVICE
#endif

namespace vigil {

// What the config says (times in seconds, levels in dB_AE: 0 dB_AE = 1 uV at the sensor).
struct AeHitSettings {
  double threshold_db = 45;
  double floating_margin_db = 0;  // > 0: threshold = max(threshold_db, noise level + this)
  double floating_window_s = 0.1; // noise level = mean |V| over the previous window of this length
  double hdt_s = 800e-6;          // hit definition time
  double pdt_s = 200e-6;          // peak definition time
  double hlt_s = 1000e-6;         // hit lockout time
  double max_duration_s = 0.1;    // a longer hit is cut here (flagged `truncated`)
  double full_scale_v = 1.0;      // volts at the ADC input for sample value 1.0
  double preamp_gain_db = 40;     // between sensor and ADC
  double level_interval_s = 1.0;  // time-driven RMS and ASL every this long; 0 = off
  // Transient capture (pipeline stage only): each hit's waveform from pretrigger before the
  // arrival, waveform_s long in all; 0 = off.
  double pretrigger_s = 0;
  double waveform_s = 0;
  uint32_t waveform_buffers = 64;  // captures that may wait for the output thread
#if __cplusplus >= 202002L  // (nvcc compiles this header as C++17)
  bool operator==(const AeHitSettings&) const = default;
#endif
};

// The same in samples, as both backends use it. Built by ae_sample_params (which validates).
struct AeSampleParams {
  double rate_hz = 0;
  double volts_per_unit = 0;  // sensor volts for sample value 1.0
  float threshold = 0;        // fixed threshold, sample units
  double floating_gain = 0;   // 10^(margin/20); 0 = fixed threshold only
  uint32_t floating_window = 0;  // samples; 0 = fixed threshold only
  uint64_t hdt = 0, pdt = 0, hlt = 0, max_duration = 0;  // samples
  uint32_t level_interval = 0;   // samples; 0 = off
};

// Throws std::invalid_argument naming the setting that is out of range.
AeSampleParams ae_sample_params(const AeHitSettings& s, double rate_hz);

// Threshold a noise window of mean |x| = mean_abs sets (same rounding on both backends).
VIGIL_HOST_DEVICE inline float ae_floating_threshold(const AeSampleParams& p, double mean_abs) noexcept {
  const double t = mean_abs * p.floating_gain;
  return t > double(p.threshold) ? float(t) : p.threshold;
}

// One hit in sample terms (frames counted from the start of the stream).
struct AeHit {
  uint32_t channel = 0;
  uint64_t arrival_frame = 0;  // first sample with |x| >= threshold
  uint64_t peak_frame = 0;
  uint64_t end_frame = 0;      // last sample with |x| >= threshold
  float peak = 0;              // |x| at peak_frame
  float threshold = 0;         // in force at the arrival
  uint32_t counts = 0;         // positive-going crossings of +threshold
  uint32_t counts_to_peak = 0;
  double sum_sq = 0;           // sum of x^2 over arrival..end
  double sum_abs = 0;          // sum of |x| over arrival..end
  bool truncated = false;      // cut at the maximum duration
};

// A hit in physical units.
struct AeHitFeatures {
  double amplitude_db = 0;      // 20 log10(peak V / 1 uV)
  double threshold_db = 0;
  double rise_time_s = 0;       // arrival -> peak
  double duration_s = 0;        // arrival -> last crossing
  double energy_eu = 0;         // sum V^2 dt / 1e-14 V^2 s
  double signal_strength_pvs = 0;  // sum |V| dt, pV s
  double rms_v = 0;             // over arrival..end
};
AeHitFeatures ae_hit_features(const AeHit& h, const AeSampleParams& p) noexcept;

// Time-driven level of one channel over one interval.
struct AeLevel {
  uint32_t channel = 0;
  uint64_t end_frame = 0;  // last sample of the interval
  double sum_sq = 0, sum_abs = 0;
  uint32_t samples = 0;
};
double ae_level_rms_v(const AeLevel& l, const AeSampleParams& p) noexcept;
double ae_level_asl_db(const AeLevel& l, const AeSampleParams& p) noexcept;  // 20 log10(mean|V| / 1 uV)

// Per-channel state the engine carries across chunks (plain data: the CUDA twin keeps the same).
struct AeChannelState {
  enum Phase : uint32_t { kIdle = 0, kHit = 1, kLockout = 2 };
  uint32_t phase = kIdle;
  float threshold = 0;
  float prev = 0;              // previous sample (for positive-going crossings)
  bool peak_locked = false;
  uint64_t lockout_end = 0;    // first frame that may open a hit again
  AeHit hit;                   // the open hit
  double run_sq = 0, run_abs = 0;  // sums since the arrival, up to the current sample
  double noise_sum = 0;        // sum |x| in the current floating window
  double level_sq = 0, level_abs = 0;  // current level interval
};

// The hit state machine's steps at one sample n, shared by the CPU engine below and the CUDA
// kernels (cuda/ae_hits_step.cuh), so that both take the same decisions by the same code.
//
// Before a sample is taken: an open hit whose HDT passed with no crossing, or that reached the
// maximum duration, closes (emit(const AeHit&)) into the lockout; a lockout that ended frees the
// channel.
template <typename Emit>
VIGIL_HOST_DEVICE inline void ae_close_if_due(const AeSampleParams& p, AeChannelState& s, uint64_t n, Emit&& emit) {
  if (s.phase == AeChannelState::kHit) {
    if (n - s.hit.end_frame > p.hdt) {  // HDT passed with no crossing
      emit(s.hit);
      s.phase = AeChannelState::kLockout;
      s.lockout_end = s.hit.end_frame + p.hdt + 1 + p.hlt;
    } else if (n - s.hit.arrival_frame >= p.max_duration) {
      s.hit.truncated = true;
      emit(s.hit);
      s.phase = AeChannelState::kLockout;
      s.lockout_end = n + p.hlt;
    }
  }
  if (s.phase == AeChannelState::kLockout && n >= s.lockout_end) s.phase = AeChannelState::kIdle;
}

// A free channel's sample v (|v| = a) at or above the threshold thr opens a hit; rising: it
// crossed +thr upward.
VIGIL_HOST_DEVICE inline void ae_open_hit(AeChannelState& s, uint32_t channel, uint64_t n, float v, float a, float thr,
                                          bool rising) {
  s.phase = AeChannelState::kHit;
  s.hit = AeHit{};
  s.hit.channel = channel;
  s.hit.arrival_frame = s.hit.peak_frame = s.hit.end_frame = n;
  s.hit.peak = a;
  s.hit.threshold = thr;
  s.hit.counts = s.hit.counts_to_peak = rising ? 1 : 0;
  s.peak_locked = false;
  s.run_sq = double(v) * v;
  s.run_abs = a;
  s.hit.sum_sq = s.run_sq;
  s.hit.sum_abs = s.run_abs;
}

// An open hit takes a sample at or above the threshold (|v| = a), its own x^2 and |x| already in
// run_sq and run_abs: a crossing counted, the end and sums moved to it, the peak taken while
// PDT has not locked it.
VIGIL_HOST_DEVICE inline void ae_hit_takes_above(const AeSampleParams& p, AeChannelState& s, uint64_t n, float a,
                                                 bool rising) {
  if (rising) ++s.hit.counts;
  s.hit.end_frame = n;
  s.hit.sum_sq = s.run_sq;
  s.hit.sum_abs = s.run_abs;
  if (!s.peak_locked && n - s.hit.peak_frame > p.pdt) s.peak_locked = true;
  if (!s.peak_locked && a > s.hit.peak) {
    s.hit.peak = a;
    s.hit.peak_frame = n;
    s.hit.counts_to_peak = s.hit.counts;
  }
}

class AeHitDetector {
 public:
  AeHitDetector(const AeSampleParams& params, uint32_t channels);

  // Feeds `frames` samples of channel c starting at stream frame `first_frame` (consecutive
  // calls per channel must be contiguous). on_hit(const AeHit&) for each hit that ends,
  // on_level(const AeLevel&) for each level interval that ends. RT-safe.
  template <typename OnHit, typename OnLevel>
  void push(uint32_t c, const float* x, uint32_t frames, uint64_t first_frame, OnHit&& on_hit, OnLevel&& on_level) {
    push(c, x, frames, first_frame, on_hit, on_level, [](const AeHit&) {});
  }
  // The same, with on_open(const AeHit&) called at each arrival (for transient capture).
  template <typename OnHit, typename OnLevel, typename OnOpen>
  void push(uint32_t c, const float* x, uint32_t frames, uint64_t first_frame, OnHit&& on_hit, OnLevel&& on_level,
            OnOpen&& on_open);

  void reset() noexcept;
  // New thresholds and times (same rate and calibration), from the next sample on; open hits
  // continue under the new times. RT-safe.
  void set_params(const AeSampleParams& p) noexcept;
  const AeChannelState& state(uint32_t c) const noexcept { return state_[c]; }
  // Continues channel c from `s` (the CUDA twin's state, when it hands over). RT-safe.
  void set_state(uint32_t c, const AeChannelState& s) noexcept { state_[c] = s; }
  const AeSampleParams& params() const noexcept { return p_; }

  // The quiet stretches push() skips through (no hit open, fixed threshold), in vector loops:
  // the first i in [0, n) with |x[i]| >= threshold (n if none; a NaN is never at or above), and
  // x's sums of squares and of |x| (in double, four running sums each, added at the end).
  static uint32_t first_at_or_above(const float* x, uint32_t n, float threshold) noexcept;
  static void add_sums(const float* x, uint32_t n, double& sum_sq, double& sum_abs) noexcept;

 private:
  AeSampleParams p_;
  std::vector<AeChannelState> state_;
};

template <typename OnHit, typename OnLevel, typename OnOpen>
void AeHitDetector::push(uint32_t c, const float* x, uint32_t frames, uint64_t first_frame, OnHit&& on_hit,
                         OnLevel&& on_level, OnOpen&& on_open) {
  AeChannelState& s = state_[c];
  // Positions in the floating window and the level interval, advanced per sample: no 64-bit
  // division per sample (n + 1 ends a window where its position reaches the window's last).
  uint64_t window_pos = p_.floating_window ? first_frame % p_.floating_window : 0;
  uint64_t level_pos = p_.level_interval ? first_frame % p_.level_interval : 0;
  // With a fixed threshold, a stretch with no hit open (idle up to the next crossing, or locked
  // out up to its end) changes only the level sums and `prev`: it is taken in one step, up to the
  // sample before the level interval's last (which the per-sample code ends).
  const bool skip_quiet = p_.floating_window == 0;
  for (uint32_t i = 0; i < frames; ++i) {
    if (skip_quiet && s.phase != AeChannelState::kHit) {
      uint32_t end = frames;
      if (p_.level_interval) end = uint32_t(std::min<uint64_t>(end, i + (p_.level_interval - 1 - level_pos)));
      if (s.phase == AeChannelState::kLockout) {
        const uint64_t n = first_frame + i;
        if (s.lockout_end > n) end = uint32_t(std::min<uint64_t>(end, i + (s.lockout_end - n)));
        else end = i;  // free at this sample: the per-sample code opens the idle phase
      } else {
        end = i + first_at_or_above(x + i, end - i, s.threshold);
      }
      if (end > i) {
        if (p_.level_interval) {
          add_sums(x + i, end - i, s.level_sq, s.level_abs);
          level_pos += end - i;
        }
        s.prev = x[end - 1];
        i = end;
        if (i == frames) break;
      }
    }
    const uint64_t n = first_frame + i;
    const float v = x[i];
    const float a = v < 0 ? -v : v;
    ae_close_if_due(p_, s, n, on_hit);
    const bool above = a >= s.threshold;
    const bool rising = v >= s.threshold && s.prev < s.threshold;
    if (s.phase == AeChannelState::kIdle && above) {
      ae_open_hit(s, c, n, v, a, s.threshold, rising);
      on_open(s.hit);
    } else if (s.phase == AeChannelState::kHit) {
      s.run_sq += double(v) * v;
      s.run_abs += a;
      if (above) ae_hit_takes_above(p_, s, n, a, rising);
    }
    s.prev = v;
    if (p_.floating_window) {
      s.noise_sum += a;
      if (++window_pos == p_.floating_window) {
        window_pos = 0;
        s.threshold = ae_floating_threshold(p_, s.noise_sum / p_.floating_window);
        s.noise_sum = 0;
      }
    }
    if (p_.level_interval) {
      s.level_sq += double(v) * v;
      s.level_abs += a;
      if (++level_pos == p_.level_interval) {
        level_pos = 0;
        on_level(AeLevel{c, n, s.level_sq, s.level_abs, p_.level_interval});
        s.level_sq = s.level_abs = 0;
      }
    }
  }
}

}  // namespace vigil
