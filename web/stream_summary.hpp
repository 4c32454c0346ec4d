// StreamSummary: what the web view shows of one received stream, kept small whatever its rate:
// a min/max envelope of the last `window_s` seconds in fixed buckets, an averaged spectrum of the
// newest `fft_size` samples, and an RMS trend over consecutive windows. Fed by vigil-listen's
// receive loop; read when an update is built. Thread: the caller's (vigil-listen's main thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dsp/real_fft.hpp"

namespace vigil::web {

struct SummaryOptions {
  double window_s = 1.0;         // the waveform envelope spans this much signal time
  size_t envelope_buckets = 1000;  // finest resolution kept of it
  size_t fft_size = 1024;        // spectrum frame (power of two); bin width rate / fft_size
  double spectrum_alpha = 0.25;  // weight of the newest frame in the exponential average
  double trend_window_s = 0.1;   // one RMS value per this much signal
  double trend_span_s = 30;      // RMS values kept
};

class StreamSummary {
 public:
  // rate_hz > 0. Throws std::invalid_argument for options out of range.
  StreamSummary(double rate_hz, const SummaryOptions& options);

  // n samples; t_first_s: UTC seconds of the first (from the packet's VITA 49 timestamp).
  void add(const float* x, size_t n, double t_first_s) noexcept;

  double rate_hz() const noexcept { return rate_hz_; }
  size_t bucket_samples() const noexcept { return bucket_len_; }
  uint64_t samples() const noexcept { return total_; }

  // The completed buckets of the envelope, grouped `group` at a time (the newest group ends with
  // the newest completed bucket; the oldest may be partial): mn/mx per group, t_last_s the time of
  // the newest completed bucket's last sample, dt_s the time per group. Empty before one bucket.
  struct Envelope {
    std::vector<float> mn, mx;
    double t_last_s = 0, dt_s = 0;
  };
  Envelope envelope(size_t max_points) const;

  // Folds the newest fft_size samples into the averaged spectrum (mean removed, Hann window,
  // scaled so a sine of amplitude A reads 20·log10(A) dB at its bin) unless no sample arrived
  // since the last call. False until fft_size samples have arrived.
  bool update_spectrum();
  // The averaged power spectrum in dB, fft_size/2 + 1 bins of rate/fft_size Hz (after update_spectrum).
  const std::vector<float>& spectrum_db() const noexcept { return spectrum_db_; }
  double bin_hz() const noexcept { return rate_hz_ / double(fft_size_); }
  // The raw power of the newest frame (before averaging): for tests.
  const std::vector<double>& last_power() const noexcept { return last_power_; }

  // RMS trend: values over consecutive windows of trend_samples(), oldest first, t_last_s the
  // time of the newest window's last sample. At most max_points values: groups of windows
  // reduced to their largest RMS (an exceedance stays visible).
  struct Trend {
    std::vector<float> rms;
    double t_last_s = 0, dt_s = 0;
  };
  Trend trend(size_t max_points) const;
  size_t trend_samples() const noexcept { return trend_len_; }

 private:
  double rate_hz_;
  SummaryOptions opt_;
  // Envelope: completed buckets in a ring, plus the one being filled.
  size_t bucket_len_;
  std::vector<float> ring_min_, ring_max_;
  size_t ring_next_ = 0, ring_count_ = 0;
  float cur_min_ = 0, cur_max_ = 0;
  size_t cur_n_ = 0;
  uint64_t total_ = 0;
  double t_bucket_end_s_ = 0; // time of the newest completed bucket's last sample
  // Spectrum: the newest fft_size samples in a ring.
  size_t fft_size_;
  std::vector<float> frame_ring_;
  size_t frame_next_ = 0;
  uint64_t samples_at_spectrum_ = 0;
  std::unique_ptr<RealFft> fft_;
  FftwBuffer fft_in_, fft_out_;
  std::vector<float> window_;
  double power_scale_ = 1;
  std::vector<double> avg_power_, last_power_;
  std::vector<float> spectrum_db_;
  // Trend.
  size_t trend_len_;
  double sum_sq_ = 0;
  size_t sum_n_ = 0;
  std::vector<float> trend_ring_;
  size_t trend_next_ = 0, trend_count_ = 0;
  double t_trend_end_s_ = 0;
};

}  // namespace vigil::web
