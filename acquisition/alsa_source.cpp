// RT: capture thread (read). Set-up (constructor) on the main thread.
#include "acquisition/alsa_source.hpp"

#include <alsa/asoundlib.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/clock.hpp"

namespace vigil {
namespace {

snd_pcm_format_t alsa_format(AlsaFormat f) {
  switch (f) {
    case AlsaFormat::kS16Le: return SND_PCM_FORMAT_S16_LE;
    case AlsaFormat::kS24_3Le: return SND_PCM_FORMAT_S24_3LE;
    case AlsaFormat::kS32Le: return SND_PCM_FORMAT_S32_LE;
    case AlsaFormat::kFloatLe: return SND_PCM_FORMAT_FLOAT_LE;
  }
  return SND_PCM_FORMAT_UNKNOWN;
}

// How a device format lands in a chunk (S24_3LE is widened to 32-bit, full scale kept).
SampleFormat chunk_format(AlsaFormat f) {
  switch (f) {
    case AlsaFormat::kS16Le: return SampleFormat::kInt16;
    case AlsaFormat::kFloatLe: return SampleFormat::kFloat32;
    default: return SampleFormat::kInt32;
  }
}

uint32_t device_bytes(AlsaFormat f) { return f == AlsaFormat::kS16Le ? 2 : f == AlsaFormat::kS24_3Le ? 3 : 4; }

[[noreturn]] void fail(const AlsaSpec& s, const std::string& what, int err) {
  throw std::runtime_error("ALSA device '" + s.device + "': " + what + (err ? std::string(": ") + snd_strerror(err) : ""));
}

int64_t ts_ns(const snd_htimestamp_t& t) { return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

}  // namespace

AlsaSource::AlsaSource(AlsaSpec spec, const std::string& alsa_config) : spec_(std::move(spec)), granted_(spec_) {
  if (!alsa_config.empty()) {
    snd_config_t* top = nullptr;
    snd_input_t* in = nullptr;
    int err = 0;
    if ((err = snd_config_top(&top)) < 0) fail(spec_, "cannot create a configuration", err);
    config_ = top;
    if ((err = snd_input_buffer_open(&in, alsa_config.data(), ssize_t(alsa_config.size()))) < 0) {
      snd_config_delete(top);
      fail(spec_, "cannot read the configuration text", err);
    }
    err = snd_config_load(top, in);
    snd_input_close(in);
    if (err < 0) {
      snd_config_delete(top);
      fail(spec_, "the configuration text is invalid", err);
    }
  }
  try {
    open_and_configure();
  } catch (...) {
    if (config_) snd_config_delete(static_cast<snd_config_t*>(config_));
    throw;
  }
  format_.rate_hz = granted_.rate_hz;
  format_.channels = spec_.channels;
  format_.format = chunk_format(spec_.format);
  format_.chunk_frames = granted_.period_frames;
  format_.scale = full_scale_factor(format_.format);
  bytes_per_frame_ = device_bytes(spec_.format) * spec_.channels;
  if (spec_.duration_s > 0) end_frame_ = uint64_t(std::llround(spec_.duration_s * granted_.rate_hz));
}

void AlsaSource::open_and_configure() {
  int err = config_ ? snd_pcm_open_lconf(&pcm_, spec_.device.c_str(), SND_PCM_STREAM_CAPTURE, 0,
                                         static_cast<snd_config_t*>(config_))
                    : snd_pcm_open(&pcm_, spec_.device.c_str(), SND_PCM_STREAM_CAPTURE, 0);
  if (err < 0) {
    pcm_ = nullptr;
    fail(spec_, "cannot open for capture", err);
  }
  try {
    snd_pcm_hw_params_t* hw = nullptr;
    snd_pcm_hw_params_alloca(&hw);
    if ((err = snd_pcm_hw_params_any(pcm_, hw)) < 0) fail(spec_, "no configuration available", err);
    if ((err = snd_pcm_hw_params_set_access(pcm_, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0)
      fail(spec_, "interleaved read access refused", err);
    if ((err = snd_pcm_hw_params_set_format(pcm_, hw, alsa_format(spec_.format))) < 0)
      fail(spec_, std::string("format ") + to_string(spec_.format) + " not offered (try a plughw: device)", err);
    if ((err = snd_pcm_hw_params_set_channels(pcm_, hw, spec_.channels)) < 0)
      fail(spec_, std::to_string(spec_.channels) + " channels not offered (try a plughw: device)", err);
    unsigned rate = unsigned(std::lround(spec_.rate_hz));
    int dir = 0;
    if ((err = snd_pcm_hw_params_set_rate_near(pcm_, hw, &rate, &dir)) < 0) fail(spec_, "no sample rate", err);
    snd_pcm_uframes_t period = spec_.period_frames, buffer = spec_.buffer_frames;
    if ((err = snd_pcm_hw_params_set_period_size_near(pcm_, hw, &period, &dir)) < 0) fail(spec_, "no period size", err);
    if ((err = snd_pcm_hw_params_set_buffer_size_near(pcm_, hw, &buffer)) < 0) fail(spec_, "no buffer size", err);
    if ((err = snd_pcm_hw_params(pcm_, hw)) < 0) fail(spec_, "the hardware parameters were refused", err);
    if (format_.rate_hz > 0 && (double(rate) != format_.rate_hz || period != format_.chunk_frames))
      fail(spec_, "came back with another rate or period", 0);  // (a reopen must match the running graph)
    granted_.rate_hz = rate;
    granted_.period_frames = uint32_t(period);
    granted_.buffer_frames = uint32_t(buffer);
    std::ostringstream line;
    line << "ALSA '" << spec_.device << "': asked " << to_string(spec_.format) << " " << spec_.channels << " ch "
         << spec_.rate_hz << " Hz, period " << spec_.period_frames << ", buffer " << spec_.buffer_frames
         << "; granted " << rate << " Hz, period " << period << ", buffer " << buffer;
    negotiation_ = line.str();
    const bool differs = double(rate) != spec_.rate_hz || period != spec_.period_frames || buffer != spec_.buffer_frames;
    if (differs && spec_.strict) fail(spec_, "strict: " + negotiation_, 0);
    if (differs) negotiation_ += " (adapted)";

    snd_pcm_sw_params_t* sw = nullptr;
    snd_pcm_sw_params_alloca(&sw);
    snd_pcm_sw_params_current(pcm_, sw);
    snd_pcm_sw_params_set_tstamp_mode(pcm_, sw, SND_PCM_TSTAMP_ENABLE);
    snd_pcm_sw_params_set_tstamp_type(pcm_, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC);
    snd_pcm_sw_params_set_avail_min(pcm_, sw, period);
    if ((err = snd_pcm_sw_params(pcm_, sw)) < 0) fail(spec_, "the software parameters were refused", err);
    if ((err = snd_pcm_prepare(pcm_)) < 0) fail(spec_, "cannot prepare", err);
  } catch (...) {
    snd_pcm_close(pcm_);
    pcm_ = nullptr;
    throw;
  }
}

void AlsaSource::go_down() noexcept {
  if (pcm_) snd_pcm_close(pcm_);
  pcm_ = nullptr;
  down_.store(true, std::memory_order_relaxed);
  overrun_pending_ = false;  // the gap the next chunk reports is the outage, not an overrun
  backoff_.start(mono_now_ns());
}

bool AlsaSource::try_reopen() noexcept {
  const int64_t now = mono_now_ns();
  if (!backoff_.due(now)) return false;
  try {
    open_and_configure();  // allocates: acceptable while the device is gone anyway
  } catch (...) {
    backoff_.failed(now);  // capped exponential backoff
    return false;
  }
  down_.store(false, std::memory_order_relaxed);
  reopens_.fetch_add(1, std::memory_order_relaxed);
  gap_pending_ = true;  // the next chunk measures and flags the frames missed meanwhile
  return true;
}

AlsaSource::~AlsaSource() {
  if (pcm_) snd_pcm_close(pcm_);
  if (config_) snd_config_delete(static_cast<snd_config_t*>(config_));
}

ReadStatus AlsaSource::read(Chunk& chunk) noexcept {
  if (next_frame_ >= end_frame_) return ReadStatus::kEnd;
  if (down_.load(std::memory_order_relaxed) && !try_reopen()) return ReadStatus::kError;
  const uint32_t frames = uint32_t(std::min<uint64_t>(format_.chunk_frames, end_frame_ - next_frame_));
  const size_t chunk_bytes = size_t(frames) * spec_.channels * bytes_per_sample(format_.format);
  if (chunk_bytes > chunk.capacity_bytes) return ReadStatus::kError;
  auto* dst = reinterpret_cast<uint8_t*>(chunk.data);
  uint32_t got = 0;
  int recoveries = 0;  // in this read: a device that overruns again at once is gone, not slow
  while (got < frames) {
    const snd_pcm_sframes_t n = snd_pcm_readi(pcm_, dst + size_t(got) * bytes_per_frame_, frames - got);
    if (n == -EAGAIN || n == 0) {  // (blocking mode: rare) wait for data rather than spin
      if (snd_pcm_wait(pcm_, 100) < 0) {
        go_down();
        return ReadStatus::kError;
      }
      continue;
    }
    if (n == -EPIPE || n == -ESTRPIPE) {
      // Overrun (or suspend): recover, count, and restart this chunk so it is contiguous; the
      // gap is measured from the timestamps below.
      if (++recoveries > 3 || snd_pcm_recover(pcm_, int(n), 1) < 0) {
        go_down();
        return ReadStatus::kError;
      }
      overruns_.fetch_add(1, std::memory_order_relaxed);
      overrun_pending_ = gap_pending_ = true;
      got = 0;
      continue;
    }
    if (n < 0) {  // -ENODEV, -EBADFD...: the device is gone; reopened with backoff
      go_down();
      return ReadStatus::kError;
    }
    got += uint32_t(n);
  }
  const int64_t now = mono_now_ns();
  // Time of the chunk's last frame: the status timestamp is when the device pointer stood at
  // (our position + avail), so the last frame we read came avail frames before it.
  int64_t t_last = now;
  snd_pcm_status_t* st = nullptr;
  snd_pcm_status_alloca(&st);
  if (snd_pcm_status(pcm_, st) == 0) {
    snd_htimestamp_t ts{};
    snd_pcm_status_get_htstamp(st, &ts);
    const int64_t t = ts_ns(ts);
    if (t > 0 && t <= now + 1'000'000'000)
      t_last = t - int64_t(double(snd_pcm_status_get_avail(st)) * 1e9 / format_.rate_hz);
  }
  const int64_t span = int64_t(double(frames - 1) * 1e9 / format_.rate_hz);
  ChunkHeader& h = chunk.header;
  if (!anchored_) {
    start_mono_ns_ = t_last - span;
    const int64_t offset = utc_minus_mono_ns();
    start_utc_ns_ = start_mono_ns_ + offset;
    wall_clock_.anchor(offset);
    anchored_ = true;
  } else if (gap_pending_) {
    // Frames the device dropped: how far the measured time is ahead of the frame-counted one,
    // less the offset the device's own clock has built up (DeviceClockOffset).
    const int64_t expected = start_mono_ns_ + frames_to_ns(next_frame_, format_.rate_hz) + offset_.median();
    const double behind = double(t_last - span - expected) * format_.rate_hz / 1e9;
    const uint64_t lost = behind > 0 ? uint64_t(std::llround(behind)) : 0;
    next_frame_ += lost;
    h.flags |= chunk_flags::kOverrunBefore | (overrun_pending_ ? chunk_flags::kSourceOverrun : chunk_flags::kSourceResumed);
    h.frames_lost_before += lost;
  } else {
    offset_.add(t_last - span - (start_mono_ns_ + frames_to_ns(next_frame_, format_.rate_hz)));
  }
  overrun_pending_ = gap_pending_ = false;
  follow_wall_clock(wall_clock_, now, start_utc_ns_, h);
  if (spec_.format == AlsaFormat::kS24_3Le) {  // widen in place, from the end (4 i >= 3 i)
    const size_t samples = size_t(frames) * spec_.channels;
    for (size_t i = samples; i-- > 0;) {
      const uint8_t* b = dst + 3 * i;
      const uint32_t u = uint32_t(b[0]) << 8 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 24;
      std::memcpy(dst + 4 * i, &u, 4);
    }
  }
  h.first_frame = next_frame_;
  h.frames = frames;
  h.channels = spec_.channels;
  h.format = format_.format;
  h.t_first_utc_ns = start_utc_ns_ + frames_to_ns(next_frame_, format_.rate_hz);
  h.t_capture_mono_ns = now;
  next_frame_ += frames;
  return ReadStatus::kOk;
}

}  // namespace vigil
