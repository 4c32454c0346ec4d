// Synthetic signal generation. Every value is a function of the seed and the frame index alone
// (state advances sample by sample), so the stream does not depend on the chunk size.
#include "acquisition/synthetic_source.hpp"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

#include "core/clock.hpp"
#include "core/stream_format.hpp"

namespace vigil {
namespace {

[[noreturn]] void reject(const std::string& what) {
  throw std::invalid_argument("synthetic source: " + what);
}

void check_range(const char* name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    std::ostringstream m;
    m << name << " must be " << lo << ".." << hi << ", got " << v;
    reject(m.str());
  }
}

uint64_t time_to_frame(double t_s, double rate_hz) noexcept {
  return uint64_t(std::llround(t_s * rate_hz));
}

}  // namespace

SyntheticSource::SyntheticSource(SyntheticSpec spec) : spec_(std::move(spec)) {
  check_range("rate_hz", spec_.rate_hz, 1.0, 10e6);
  check_range("channels", spec_.channels, 1, kMaxChannels);
  check_range("chunk_frames", spec_.chunk_frames, 1, 1 << 20);
  check_range("rate_factor", spec_.rate_factor, 0.0, 10000.0);
  check_range("duration_s", spec_.duration_s, 0.0, 1e9);
  if (spec_.signals.empty()) spec_.signals.resize(1);
  if (spec_.signals.size() != 1 && spec_.signals.size() != spec_.channels)
    reject("signals must list 1 or " + std::to_string(spec_.channels) + " entries (one per channel), got " +
           std::to_string(spec_.signals.size()));
  const double nyquist = spec_.rate_hz / 2.0;
  for (const ChannelSignal& s : spec_.signals) {
    for (const SineSpec& w : s.sines) {
      check_range("sine freq_hz", w.freq_hz, 0.0, nyquist);
      check_range("sine amplitude", w.amplitude, -1e6, 1e6);
    }
    check_range("noise_rms", s.noise_rms, 0.0, 1e6);
    check_range("impulse period_s", s.impulses.period_s, 0.0, 1e9);
    check_range("impulse offset_s", s.impulses.offset_s, 0.0, 1e9);
    check_range("burst decay_s", s.bursts.decay_s, 1e-9, 1e3);
    check_range("burst rise_s", s.bursts.rise_s, 0.0, 1e3);
    check_range("burst freq_hz", s.bursts.freq_hz, 0.0, nyquist);
    check_range("burst rate_hz", s.bursts.rate_hz, 0.0, spec_.rate_hz);
    if (!std::is_sorted(s.impulses.times_s.begin(), s.impulses.times_s.end()) ||
        !std::is_sorted(s.bursts.times_s.begin(), s.bursts.times_s.end()))
      reject("impulse and burst times_s must be in ascending order");
  }

  if (spec_.ae_sources)
    planted_ = std::make_unique<PlantedAeSources>(*spec_.ae_sources, spec_.rate_hz, spec_.channels, spec_.seed);
  state_.resize(spec_.channels);
  for (uint32_t c = 0; c < spec_.channels; ++c) {
    ChannelState& st = state_[c];
    st.signal = &spec_.signals[spec_.signals.size() == 1 ? 0 : c];
    // Separate streams per channel and per purpose, so adding bursts does not change the noise.
    st.noise = Random(spec_.seed * 1000003u + 2u * c);
    st.burst_rng = Random(spec_.seed * 1000003u + 2u * c + 1u);
    const ImpulseSpec& imp = st.signal->impulses;
    if (imp.period_s > 0) st.next_impulse = time_to_frame(imp.offset_s, spec_.rate_hz);
    if (st.signal->bursts.rate_hz > 0)
      st.next_burst_poisson = time_to_frame(st.burst_rng.exponential(1.0 / st.signal->bursts.rate_hz),
                                            spec_.rate_hz);
  }
  if (spec_.duration_s > 0) end_frame_ = time_to_frame(spec_.duration_s, spec_.rate_hz);
  scratch_.resize(spec_.chunk_frames);
  check_range("loop_s", spec_.loop_s, 0.0, 3600.0);
  if (spec_.loop_s > 0) {  // the loop, generated chunk by chunk as read() would
    loop_frames_ = std::max<uint64_t>(1, time_to_frame(spec_.loop_s, spec_.rate_hz));
    const size_t frame_bytes = size_t(spec_.channels) * bytes_per_sample(spec_.format);
    if (loop_frames_ * frame_bytes > (uint64_t(1) << 30)) reject("loop_s: the loop would take more than 1 GiB");
    loop_.resize(loop_frames_ * frame_bytes);
    for (uint64_t at = 0; at < loop_frames_; at += spec_.chunk_frames)
      fill(uint32_t(std::min<uint64_t>(spec_.chunk_frames, loop_frames_ - at)), loop_.data() + at * frame_bytes);
    // Half the cores, 2 to 8, unless set: S1's 800 channels (105 MB a chunk, in 16 parts 0.41 ms
    // apart) on the 16-core H200 host fell behind in 1 run of 2 with 4, in none of 4 with 8.
    const uint32_t copiers =
        spec_.copy_threads ? spec_.copy_threads : std::clamp(WorkerPool::hardware_threads() / 2, 2u, 8u);
    if (size_t(spec_.chunk_frames) * frame_bytes >= kSplitCopyBytes && copiers > 1)
      copy_pool_ = std::make_unique<WorkerPool>(copiers, false, "vigil-copy");
  }
}

SourceFormat SyntheticSource::format() const noexcept {
  return {spec_.rate_hz, spec_.channels, spec_.format, spec_.chunk_frames, full_scale_factor(spec_.format)};
}

void SyntheticSource::start_burst(ChannelState& st, uint64_t onset) noexcept {
  // A burst that finds all slots busy replaces the oldest: with 32 slots that needs a burst rate
  // above 3 per time constant, far beyond anything AE-like.
  ActiveBurst* slot = &st.bursts[0];
  for (ActiveBurst& b : st.bursts) {
    if (!b.active) {
      slot = &b;
      break;
    }
    if (b.onset < slot->onset) slot = &b;
  }
  slot->onset = onset;
  slot->active = true;
}

void SyntheticSource::generate_channel(uint32_t c, uint32_t frames, float* out) noexcept {
  ChannelState& st = state_[c];
  const ChannelSignal& sig = *st.signal;
  const double rate = spec_.rate_hz;
  const double two_pi = 2.0 * std::numbers::pi;
  const double rise_frames = sig.bursts.rise_s * rate;
  const uint64_t burst_len = uint64_t(std::ceil(rise_frames + 10.0 * sig.bursts.decay_s * rate));
  const double burst_decay_per_frame = 1.0 / (sig.bursts.decay_s * rate);

  for (uint32_t i = 0; i < frames; ++i) {
    const uint64_t n = st.next_frame + i;
    double v = 0.0;
    for (const SineSpec& w : sig.sines) {
      const double cycles = w.freq_hz * double(n) / rate;
      v += w.amplitude * std::sin(two_pi * (cycles - std::floor(cycles)) + w.phase_rad);
    }
    if (sig.noise_rms > 0) v += sig.noise_rms * st.noise.normal();

    const ImpulseSpec& imp = sig.impulses;
    while (n == st.next_impulse) {
      v += imp.amplitude;
      ++st.impulse_k;
      st.next_impulse = time_to_frame(imp.offset_s + imp.period_s * double(st.impulse_k), rate);
    }
    while (st.next_impulse_time < imp.times_s.size() &&
           time_to_frame(imp.times_s[st.next_impulse_time], rate) <= n) {
      if (time_to_frame(imp.times_s[st.next_impulse_time], rate) == n) v += imp.amplitude;
      ++st.next_impulse_time;
    }

    const BurstSpec& bs = sig.bursts;
    while (n >= st.next_burst_poisson) {
      start_burst(st, st.next_burst_poisson);
      st.next_burst_poisson += std::max<uint64_t>(1, time_to_frame(st.burst_rng.exponential(1.0 / bs.rate_hz), rate));
    }
    while (st.next_burst_time < bs.times_s.size() && time_to_frame(bs.times_s[st.next_burst_time], rate) <= n) {
      start_burst(st, time_to_frame(bs.times_s[st.next_burst_time], rate));
      ++st.next_burst_time;
    }
    for (ActiveBurst& b : st.bursts) {
      if (!b.active) continue;
      const uint64_t k = n - b.onset;
      if (k >= burst_len) {
        b.active = false;
        continue;
      }
      const double cycles = bs.freq_hz * double(k) / rate;
      const double env = double(k) < rise_frames ? double(k) / rise_frames
                                                  : std::exp(-(double(k) - rise_frames) * burst_decay_per_frame);
      v += bs.amplitude * env * std::sin(two_pi * (cycles - std::floor(cycles)));
    }
    out[i] = float(v);
  }
  if (planted_) planted_->add(c, st.next_frame, frames, out);
  st.next_frame += frames;
}

void SyntheticSource::fill(uint32_t frames, std::byte* out) noexcept {
  const uint32_t ch = spec_.channels;
  for (uint32_t c = 0; c < ch; ++c) {
    generate_channel(c, frames, scratch_.data());
    switch (spec_.format) {
      case SampleFormat::kInt16: {
        auto* d = reinterpret_cast<int16_t*>(out);
        for (uint32_t i = 0; i < frames; ++i)
          d[size_t(i) * ch + c] = int16_t(std::clamp(std::lrint(double(scratch_[i]) * 32768.0), -32768L, 32767L));
        break;
      }
      case SampleFormat::kInt32: {
        auto* d = reinterpret_cast<int32_t*>(out);
        for (uint32_t i = 0; i < frames; ++i)
          d[size_t(i) * ch + c] = int32_t(std::clamp<long long>(std::llrint(double(scratch_[i]) * 2147483648.0),
                                                                -2147483648LL, 2147483647LL));
        break;
      }
      case SampleFormat::kFloat32: {
        auto* d = reinterpret_cast<float*>(out);
        for (uint32_t i = 0; i < frames; ++i) d[size_t(i) * ch + c] = scratch_[i];
        break;
      }
    }
  }
}

void SyntheticSource::copy_from_loop(uint64_t at, uint32_t frames, std::byte* out) noexcept {
  const size_t frame_bytes = size_t(spec_.channels) * bytes_per_sample(spec_.format);
  for (uint32_t done = 0; done < frames;) {  // wrapping around the loop
    const uint32_t n = uint32_t(std::min<uint64_t>(frames - done, loop_frames_ - at));
    std::memcpy(out + size_t(done) * frame_bytes, loop_.data() + at * frame_bytes, size_t(n) * frame_bytes);
    done += n;
    at = 0;
  }
}

ReadStatus SyntheticSource::read(Chunk& chunk) noexcept {
  if (!started_) {
    const int64_t start_mono_ns = mono_now_ns(), offset = utc_minus_mono_ns();
    start_utc_ns_ = start_mono_ns + offset;
    wall_clock_.anchor(offset);
    if (spec_.rate_factor > 0) pace_.start(start_mono_ns, spec_.rate_hz, spec_.rate_factor, spec_.chunk_frames);
    started_ = true;
  }
  if (next_frame_ >= end_frame_) return ReadStatus::kEnd;
  const uint32_t frames = uint32_t(std::min<uint64_t>(spec_.chunk_frames, end_frame_ - next_frame_));
  const uint32_t ch = spec_.channels;
  if (size_t(frames) * ch * bytes_per_sample(spec_.format) > chunk.capacity_bytes) return ReadStatus::kError;

  const size_t frame_bytes = size_t(ch) * bytes_per_sample(spec_.format);
  const uint32_t parts = parts_of(frames);
  for (uint32_t p = 0; p < parts; ++p) {
    const WorkerPool::Range r = WorkerPool::range(frames, parts, p);
    produce(r.first, r.end - r.first, chunk.data + size_t(r.first) * frame_bytes);
    if (parts > 1 && p + 1 < parts) {  // the last part's time is the chunk's, below
      sleep_until_mono_ns(pace_.due_ns(next_frame_ + r.end));
      progress_->publish(r.end);
    }
  }

  ChunkHeader& h = chunk.header;
  h.first_frame = next_frame_;
  h.frames = frames;
  h.channels = ch;
  h.format = spec_.format;
  const uint64_t first = next_frame_;
  next_frame_ += frames;
  if (spec_.rate_factor > 0) pace_.wait_for(next_frame_);
  h.t_capture_mono_ns = mono_now_ns();
  follow_wall_clock(wall_clock_, h.t_capture_mono_ns, start_utc_ns_, h);
  h.t_first_utc_ns = start_utc_ns_ + frames_to_ns(first, spec_.rate_hz);
  if (parts > 1) progress_->publish(frames);
  return ReadStatus::kOk;
}

std::vector<std::pair<const char*, uint64_t>> SyntheticSource::counts() const {
  if (!planted_) return {};
  return {{"planted_emissions", planted_->emissions()}};
}

uint32_t SyntheticSource::parts_of(uint32_t frames) const noexcept {
  if (!progress_ || spec_.rate_factor <= 0) return 1;
  const size_t bytes = size_t(frames) * spec_.channels * bytes_per_sample(spec_.format);
  const auto span_ns = int64_t(double(frames_to_ns(frames, spec_.rate_hz)) / spec_.rate_factor);
  const uint64_t by_bytes = bytes / kPartBytes, by_time = uint64_t(span_ns / kMinPartNs);
  return uint32_t(std::clamp<uint64_t>(std::min(by_bytes, by_time), 1, kMaxParts));
}

void SyntheticSource::produce(uint32_t first, uint32_t frames, std::byte* out) noexcept {
  if (loop_frames_ == 0) {
    fill(frames, out);  // each channel's state carries on: parts give the samples one fill would
    return;
  }
  const size_t frame_bytes = size_t(spec_.channels) * bytes_per_sample(spec_.format);
  const uint64_t at = next_frame_ + first;
  if (copy_pool_ && size_t(frames) * frame_bytes >= kSplitCopyBytes / 4) {
    const uint32_t parts = copy_pool_->threads();
    auto part = [&](uint32_t p) {
      const WorkerPool::Range r = WorkerPool::range(frames, parts, p);
      copy_from_loop((at + r.first) % loop_frames_, r.end - r.first, out + size_t(r.first) * frame_bytes);
    };
    copy_pool_->run(parts, part);
  } else {
    copy_from_loop(at % loop_frames_, frames, out);
  }
}

}  // namespace vigil
