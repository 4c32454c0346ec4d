#include "web/stream_summary.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vigil::web {

StreamSummary::StreamSummary(double rate_hz, const SummaryOptions& options) : rate_hz_(rate_hz), opt_(options) {
  if (!(rate_hz > 0) || !std::isfinite(rate_hz)) throw std::invalid_argument("stream summary: rate must be > 0");
  if (!(opt_.window_s > 0) || opt_.envelope_buckets < 1 || opt_.envelope_buckets > 100000)
    throw std::invalid_argument("stream summary: window_s > 0 and 1..100000 envelope buckets");
  if (opt_.fft_size < 16 || opt_.fft_size > (1u << 20) || (opt_.fft_size & (opt_.fft_size - 1)))
    throw std::invalid_argument("stream summary: fft_size must be a power of two in 16..2^20");
  if (!(opt_.spectrum_alpha > 0 && opt_.spectrum_alpha <= 1))
    throw std::invalid_argument("stream summary: spectrum_alpha must be in (0, 1]");
  if (!(opt_.trend_window_s > 0) || !(opt_.trend_span_s >= opt_.trend_window_s))
    throw std::invalid_argument("stream summary: trend window > 0 and span >= window");
  bucket_len_ = size_t(std::max(1.0, std::ceil(rate_hz * opt_.window_s / double(opt_.envelope_buckets))));
  ring_min_.assign(opt_.envelope_buckets, 0.f);
  ring_max_.assign(opt_.envelope_buckets, 0.f);
  fft_size_ = opt_.fft_size;
  frame_ring_.assign(fft_size_, 0.f);
  fft_ = std::make_unique<RealFft>(fft_size_);
  fft_in_ = make_fftw_buffer(fft_size_);
  fft_out_ = make_fftw_buffer(2 * (fft_size_ / 2 + 1));
  window_.resize(fft_size_);
  double wsum = 0;
  for (size_t i = 0; i < fft_size_; ++i) {  // periodic Hann: exact bins for a sine on a bin
    window_[i] = float(0.5 - 0.5 * std::cos(2 * M_PI * double(i) / double(fft_size_)));
    wsum += window_[i];
  }
  power_scale_ = 4.0 / (wsum * wsum);  // |X|² · 4/(Σw)² = A² for a sine of amplitude A
  trend_len_ = size_t(std::max(1.0, std::round(rate_hz * opt_.trend_window_s)));
  trend_ring_.assign(size_t(std::ceil(opt_.trend_span_s / opt_.trend_window_s)), 0.f);
}

void StreamSummary::add(const float* x, size_t n, double t_first_s) noexcept {
  const double dt = 1.0 / rate_hz_;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const double t = t_first_s + double(i) * dt;
    if (cur_n_ == 0) {
      cur_min_ = cur_max_ = v;
    } else {
      cur_min_ = std::min(cur_min_, v);
      cur_max_ = std::max(cur_max_, v);
    }
    if (++cur_n_ == bucket_len_) {
      ring_min_[ring_next_] = cur_min_;
      ring_max_[ring_next_] = cur_max_;
      ring_next_ = (ring_next_ + 1) % ring_min_.size();
      ring_count_ = std::min(ring_count_ + 1, ring_min_.size());
      cur_n_ = 0;
      t_bucket_end_s_ = t;
    }
    frame_ring_[frame_next_] = v;
    frame_next_ = (frame_next_ + 1) & (fft_size_ - 1);
    sum_sq_ += double(v) * double(v);
    if (++sum_n_ == trend_len_) {
      trend_ring_[trend_next_] = float(std::sqrt(sum_sq_ / double(sum_n_)));
      trend_next_ = (trend_next_ + 1) % trend_ring_.size();
      trend_count_ = std::min(trend_count_ + 1, trend_ring_.size());
      sum_sq_ = 0;
      sum_n_ = 0;
      t_trend_end_s_ = t;
    }
  }
  total_ += n;
}

StreamSummary::Envelope StreamSummary::envelope(size_t max_points) const {
  Envelope e;
  if (ring_count_ == 0 || max_points == 0) return e;
  const size_t group = (ring_count_ + max_points - 1) / max_points;
  const size_t groups = (ring_count_ + group - 1) / group;
  e.mn.resize(groups);
  e.mx.resize(groups);
  const size_t cap = ring_min_.size();
  const size_t oldest = (ring_next_ + cap - ring_count_) % cap;
  // The newest group is full; the oldest takes what is left over.
  const size_t first_len = ring_count_ - (groups - 1) * group;
  size_t k = 0;
  for (size_t g = 0; g < groups; ++g) {
    const size_t len = g == 0 ? first_len : group;
    float mn = ring_min_[(oldest + k) % cap], mx = ring_max_[(oldest + k) % cap];
    for (size_t j = 1; j < len; ++j) {
      mn = std::min(mn, ring_min_[(oldest + k + j) % cap]);
      mx = std::max(mx, ring_max_[(oldest + k + j) % cap]);
    }
    e.mn[g] = mn;
    e.mx[g] = mx;
    k += len;
  }
  e.t_last_s = t_bucket_end_s_;
  e.dt_s = double(group * bucket_len_) / rate_hz_;
  return e;
}

bool StreamSummary::update_spectrum() {
  if (total_ < fft_size_) return false;
  if (total_ == samples_at_spectrum_) return true;  // nothing new: the average stands
  samples_at_spectrum_ = total_;
  double mean = 0;
  for (size_t i = 0; i < fft_size_; ++i) mean += frame_ring_[i];
  mean /= double(fft_size_);
  for (size_t i = 0; i < fft_size_; ++i)  // oldest first: frame_next_ is the oldest sample
    fft_in_[i] = float(double(frame_ring_[(frame_next_ + i) & (fft_size_ - 1)]) - mean) * window_[i];
  fft_->forward(fft_in_.get(), fft_out_.get());
  const size_t bins = fft_size_ / 2 + 1;
  last_power_.resize(bins);
  for (size_t k = 0; k < bins; ++k) {
    const double re = fft_out_[2 * k], im = fft_out_[2 * k + 1];
    // One-sided: DC and Nyquist carry no mirrored half.
    last_power_[k] = (re * re + im * im) * power_scale_ * (k == 0 || k == bins - 1 ? 0.25 : 1.0);
  }
  if (avg_power_.empty()) {
    avg_power_ = last_power_;
  } else {
    for (size_t k = 0; k < bins; ++k)
      avg_power_[k] += opt_.spectrum_alpha * (last_power_[k] - avg_power_[k]);
  }
  spectrum_db_.resize(bins);
  for (size_t k = 0; k < bins; ++k) spectrum_db_[k] = float(10 * std::log10(avg_power_[k] + 1e-30));
  return true;
}

StreamSummary::Trend StreamSummary::trend(size_t max_points) const {
  Trend t;
  if (trend_count_ == 0 || max_points == 0) return t;
  const size_t group = (trend_count_ + max_points - 1) / max_points;
  const size_t groups = (trend_count_ + group - 1) / group;
  const size_t cap = trend_ring_.size();
  const size_t oldest = (trend_next_ + cap - trend_count_) % cap;
  const size_t first_len = trend_count_ - (groups - 1) * group;
  t.rms.resize(groups);
  size_t k = 0;
  for (size_t g = 0; g < groups; ++g) {
    const size_t len = g == 0 ? first_len : group;
    float m = 0;
    for (size_t j = 0; j < len; ++j) m = std::max(m, trend_ring_[(oldest + k + j) % cap]);
    t.rms[g] = m;
    k += len;
  }
  t.t_last_s = t_trend_end_s_;
  t.dt_s = double(group * trend_len_) / rate_hz_;
  return t;
}

}  // namespace vigil::web
