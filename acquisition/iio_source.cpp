// RT: read() on the capture thread: one refill (libiio blocks in the kernel's buffer, or in the
// socket to iiod, up to the context's timeout), then each channel's samples converted into the chunk.
#include "acquisition/iio_source.hpp"

#include <iio.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/clock.hpp"

namespace vigil {
namespace {

std::string error_text(int err) {
  char b[256];
  iio_strerror(err < 0 ? -err : err, b, sizeof b);
  return b;
}

// An attribute's text, trailing newlines and NULs cut; false when it cannot be read.
bool read_attr(const iio_channel* ch, const iio_device* dev, const char* name, std::string& out) {
  char b[256];
  const ssize_t n = ch ? iio_channel_attr_read(ch, name, b, sizeof b) : iio_device_attr_read(dev, name, b, sizeof b);
  if (n <= 0) return false;
  out.assign(b, strnlen(b, std::min<size_t>(size_t(n), sizeof b)));
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return true;
}

bool parse_number(const std::string& text, double& v) {
  char* end = nullptr;
  errno = 0;
  v = std::strtod(text.c_str(), &end);
  return !text.empty() && end && *end == '\0' && errno == 0 && std::isfinite(v);
}

std::string hz(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

constexpr int64_t kTimeoutMs = 200;  // a refill's wait: read() then looks at the capture loop's stop flag

}  // namespace

IioSource::IioSource(IioSourceSpec spec) : spec_(std::move(spec)) {
  if (spec_.chunk_frames < 1 || spec_.chunk_frames > (1u << 20))
    throw std::runtime_error("iio source: chunk_frames must be 1..1048576");
  if (spec_.kernel_buffers < 1 || spec_.kernel_buffers > 64)
    throw std::runtime_error("iio source: kernel_buffers must be 1..64");
  open();
}

IioSource::~IioSource() { close(); }

void IioSource::close() noexcept {
  if (buf_) iio_buffer_destroy(buf_);
  if (ctx_) iio_context_destroy(ctx_);
  buf_ = nullptr;
  ctx_ = nullptr;
  dev_ = nullptr;
  timestamp_ = nullptr;
  chans_.clear();
}

void IioSource::open() {
  const std::string at = "iio source " + spec_.uri;
  ctx_ = iio_create_context_from_uri(spec_.uri.c_str());
  if (!ctx_) throw std::runtime_error(at + ": cannot open the context: " + error_text(errno));
  try {
    iio_context_set_timeout(ctx_, unsigned(kTimeoutMs));
    dev_ = iio_context_find_device(ctx_, spec_.device.c_str());
    if (!dev_) {
      std::string there;
      for (unsigned i = 0; i < iio_context_get_devices_count(ctx_); ++i) {
        const iio_device* d = iio_context_get_device(ctx_, i);
        const char* name = iio_device_get_name(d);
        there += std::string(there.empty() ? "" : ", ") + iio_device_get_id(d) + (name ? std::string(" (") + name + ")" : "");
      }
      throw std::runtime_error(at + ": no device '" + spec_.device + "' (there " +
                               (there.empty() ? std::string("is none") : "are: " + there) + ")");
    }
    const std::string dev_at = at + " device " + spec_.device;
    // The channels: listed, or every signed input scan element but the timestamp.
    std::vector<std::string> ids = spec_.channels;
    std::string inputs;
    for (unsigned i = 0; i < iio_device_get_channels_count(dev_); ++i) {
      iio_channel* ch = iio_device_get_channel(dev_, i);
      if (iio_channel_is_output(ch) || !iio_channel_is_scan_element(ch)) continue;
      const std::string id = iio_channel_get_id(ch);
      if (id == "timestamp") {
        timestamp_ = ch;
        continue;
      }
      inputs += (inputs.empty() ? "" : ", ") + id;
      if (spec_.channels.empty() && iio_channel_get_data_format(ch)->is_signed) ids.push_back(id);
    }
    if (ids.empty()) throw std::runtime_error(dev_at + ": no signed input channel to capture (it has: " + inputs + ")");
    const iio_data_format* first = nullptr;
    std::string first_scale_text, first_id;
    double scale = 1;
    for (const std::string& id : ids) {
      iio_channel* ch = iio_device_find_channel(dev_, id.c_str(), false);
      const std::string ch_at = dev_at + " channel " + id;
      if (!ch) throw std::runtime_error(dev_at + ": no input channel '" + id + "' (it has: " + inputs + ")");
      if (!iio_channel_is_scan_element(ch))
        throw std::runtime_error(ch_at + ": not a scan element (it cannot be read through a buffer)");
      const iio_data_format* f = iio_channel_get_data_format(ch);
      char type[64];
      std::snprintf(type, sizeof type, "%s:%c%u/%u>>%u", f->is_be ? "be" : "le", f->is_signed ? 's' : 'u', f->bits,
                    f->length, f->shift);
      if (!f->is_signed) throw std::runtime_error(ch_at + ": unsigned samples (" + type + ") are not supported");
      if (f->bits < 2 || f->bits > 32 || f->length > 32 || f->repeat > 1)
        throw std::runtime_error(ch_at + ": sample format " + type + " is not supported (signed, up to 32 bits, one a scan)");
      const bool wide = f->length > 16 || f->bits > 16;
      if (first && (first->length > 16 || first->bits > 16) != wide)
        throw std::runtime_error(ch_at + ": " + type + " samples, but " + first_id +
                                 " has samples of the other size class (up to 16 bits, or up to 32): one source takes one");
      std::string text;
      double s = 0;
      if (!read_attr(ch, nullptr, "scale", text))
        throw std::runtime_error(ch_at + ": no attribute scale to read (the volts a code is worth)");
      if (!parse_number(text, s) || s <= 0)
        throw std::runtime_error(ch_at + ": attribute scale reads '" + text + "', not a positive number");
      if (first && s != scale)
        throw std::runtime_error(ch_at + ": attribute scale reads " + text + ", but " + first_id + "'s reads " +
                                 first_scale_text + ": every channel of one source needs the same scale");
      if (!first) first = f, first_id = id, first_scale_text = text, scale = s;
      chans_.push_back(ch);
      left_shift_.push_back((wide ? 32u : 16u) - f->bits);
    }
    // The rate: written where asked (to the device's sampling_frequency), read back either way.
    const char* freq_attr = iio_device_find_attr(dev_, "sampling_frequency");
    double rate = 0;
    std::string text, write_error;
    if (spec_.sample_rate_hz > 0) {
      if (!freq_attr)
        throw std::runtime_error(dev_at + ": has no attribute sampling_frequency to set " +
                                 hz(spec_.sample_rate_hz) + " Hz in");
      char want[64];
      std::snprintf(want, sizeof want, "%.17g", spec_.sample_rate_hz);
      // Where it cannot be set, the rate it reads must be the one asked (checked below).
      if (const ssize_t w = iio_device_attr_write(dev_, "sampling_frequency", want); w < 0)
        write_error = error_text(int(w));
    }
    if (freq_attr && read_attr(nullptr, dev_, "sampling_frequency", text)) {
      if (!parse_number(text, rate) || rate <= 0)
        throw std::runtime_error(dev_at + ": attribute sampling_frequency reads '" + text + "', not a rate");
      if (spec_.sample_rate_hz > 0 && std::fabs(rate - spec_.sample_rate_hz) > 1e-9 * spec_.sample_rate_hz)
        throw std::runtime_error(dev_at + ": attribute sampling_frequency reads " + text + " after " +
                                 (write_error.empty() ? "writing " + hz(spec_.sample_rate_hz) + " (the device's nearest rate?)"
                                                      : "it refused " + hz(spec_.sample_rate_hz) + ": " + write_error));
    } else if (spec_.sample_rate_hz > 0) {
      rate = spec_.sample_rate_hz;
    } else {
      throw std::runtime_error(dev_at + ": no attribute sampling_frequency to read the rate from: give sample_rate_hz");
    }
    if (timestamp_) {
      std::string clock;
      realtime_timestamps_ = !read_attr(nullptr, dev_, "current_timestamp_clock", clock) || clock == "realtime";
    }
    const bool wide = first->length > 16 || first->bits > 16;
    SourceFormat f;
    f.rate_hz = rate;
    f.channels = uint32_t(chans_.size());
    f.format = wide ? SampleFormat::kInt32 : SampleFormat::kInt16;
    f.chunk_frames = spec_.chunk_frames;
    // millivolts a code (the IIO ABI), over the left-justification: volts a chunk code.
    f.scale = float(scale / 1000.0 / std::ldexp(1.0, int(left_shift_[0])));
    if (format_.rate_hz > 0 && (f.rate_hz != format_.rate_hz || f.channels != format_.channels ||
                                f.format != format_.format || f.scale != format_.scale))
      throw std::runtime_error(dev_at + ": came back with another rate, channel count, format or scale");
    format_ = f;
    for (iio_channel* ch : chans_) iio_channel_enable(ch);
    if (timestamp_) iio_channel_enable(timestamp_);
    if (const int err = iio_device_set_kernel_buffers_count(dev_, spec_.kernel_buffers); err < 0)
      throw std::runtime_error(dev_at + ": cannot have " + std::to_string(spec_.kernel_buffers) + " kernel buffers: " +
                               error_text(err));
    buf_ = iio_device_create_buffer(dev_, spec_.chunk_frames, false);
    if (!buf_) throw std::runtime_error(dev_at + ": cannot create a buffer of " + std::to_string(spec_.chunk_frames) +
                                        " samples: " + error_text(errno));
    char line[512];
    std::snprintf(line, sizeof line, "IIO %s %s: %zu channel%s (%s) at %s Hz, scale %s mV%s", spec_.uri.c_str(),
                  spec_.device.c_str(), chans_.size(), chans_.size() == 1 ? "" : "s", ids.front().c_str(), text.c_str(),
                  first_scale_text.c_str(), timestamp_ ? (realtime_timestamps_ ? ", timestamps (realtime)" : ", timestamps")
                                                       : ", times from the refills");
    description_ = line;
  } catch (...) {
    close();
    throw;
  }
}

void IioSource::go_down() noexcept {
  close();
  down_.store(true, std::memory_order_relaxed);
  backoff_.start(mono_now_ns());
}

bool IioSource::try_reopen() noexcept {
  const int64_t now = mono_now_ns();
  if (!backoff_.due(now)) return false;
  try {
    left_shift_.clear();
    open();  // allocates: acceptable while the device is gone anyway
  } catch (...) {
    backoff_.failed(now);  // capped exponential backoff
    return false;
  }
  down_.store(false, std::memory_order_relaxed);
  last_data_mono_ns_ = 0;
  reopens_.fetch_add(1, std::memory_order_relaxed);
  resumed_ = true;  // the next chunk measures and flags the frames missed meanwhile
  return true;
}

std::vector<std::pair<const char*, uint64_t>> IioSource::counts() const {
  return {{"refills", refills_.load(std::memory_order_relaxed)},
          {"frames_lost", frames_lost_.load(std::memory_order_relaxed)},
          {"reopens", reopens_.load(std::memory_order_relaxed)}};
}

ReadStatus IioSource::read(Chunk& chunk) noexcept {
  if (down_.load(std::memory_order_relaxed) && !try_reopen()) return ReadStatus::kError;
  const uint32_t frames = spec_.chunk_frames, channels = format_.channels;
  const size_t width = bytes_per_sample(format_.format);
  if (size_t(frames) * channels * width > chunk.capacity_bytes) return ReadStatus::kError;
  const ssize_t got = iio_buffer_refill(buf_);
  const int64_t now = mono_now_ns();
  if (last_data_mono_ns_ == 0) last_data_mono_ns_ = now;
  if (got == -ETIMEDOUT || got == -EAGAIN) {
    // No samples for ten chunk periods (at least a second): stalled, or gone without a word (a
    // node at end of file): closed and reopened as a failed one is.
    if (now - last_data_mono_ns_ < std::max<int64_t>(1'000'000'000, 10 * frames_to_ns(frames, format_.rate_hz)))
      return ReadStatus::kIdle;
    go_down();
    return ReadStatus::kError;
  }
  if (got <= 0) {  // gone, or in error: reopened with backoff
    go_down();
    return ReadStatus::kError;
  }
  last_data_mono_ns_ = now;
  refills_.fetch_add(1, std::memory_order_relaxed);
  const ptrdiff_t step = iio_buffer_step(buf_);
  const auto* end = static_cast<const uint8_t*>(iio_buffer_end(buf_));
  for (uint32_t c = 0; c < channels; ++c) {
    const auto* p = static_cast<const uint8_t*>(iio_buffer_first(buf_, chans_[c]));
    const uint32_t shift = left_shift_[c];
    for (uint32_t f = 0; f < frames && p < end; ++f, p += step) {
      if (width == 2) {
        int16_t v = 0;
        iio_channel_convert(chans_[c], &v, p);
        const int16_t out = int16_t(uint16_t(v) << shift);
        std::memcpy(chunk.data + (size_t(f) * channels + c) * 2, &out, 2);
      } else {
        int32_t v = 0;
        iio_channel_convert(chans_[c], &v, p);
        const int32_t out = int32_t(uint32_t(v) << shift);
        std::memcpy(chunk.data + (size_t(f) * channels + c) * 4, &out, 4);
      }
    }
  }
  ChunkHeader& h = chunk.header;
  const double rate = format_.rate_hz;
  const int64_t span = frames_to_ns(frames - 1, rate);
  // The time of the chunk's first frame: its timestamp, or the refill's return less the chunk.
  int64_t device_t = now - span;
  if (timestamp_) {
    int64_t ts = 0;
    iio_channel_convert(timestamp_, &ts, iio_buffer_first(buf_, timestamp_));
    device_t = ts;
  }
  if (!anchored_) {
    anchored_ = true;
    start_device_ns_ = device_t;
    const int64_t offset = utc_minus_mono_ns();
    start_utc_ns_ = device_t + (timestamp_ && realtime_timestamps_ ? 0 : offset);
    wall_clock_.anchor(offset);
  } else {
    // Where the chunk is against its frame count, less where chunks have lately been: a jump of
    // more than 1.5 frames and 100 us with timestamps, or a refill later than the kernel buffers
    // could have held without, is frames lost (after a reopen, whatever it is).
    const int64_t expected = start_device_ns_ + frames_to_ns(next_frame_, rate);
    const int64_t ahead = device_t - expected - offset_.median();
    const int64_t period = frames_to_ns(frames, rate);
    const int64_t allowed = timestamp_ ? std::max<int64_t>(int64_t(1.5e9 / rate), 100'000)
                                       : int64_t(spec_.kernel_buffers) * period;
    if (resumed_ || ahead > allowed) {
      const uint64_t lost = ahead > 0 ? uint64_t(std::llround(double(ahead) * rate / 1e9)) : 0;
      next_frame_ += lost;
      h.flags |= chunk_flags::kOverrunBefore | (resumed_ ? chunk_flags::kSourceResumed : chunk_flags::kSourceOverrun);
      h.frames_lost_before += lost;
      frames_lost_.fetch_add(lost, std::memory_order_relaxed);
      gaps_.fetch_add(1, std::memory_order_relaxed);
      resumed_ = false;
    } else {
      offset_.add(device_t - expected);
    }
  }
  if (!timestamp_ || !realtime_timestamps_) follow_wall_clock(wall_clock_, now, start_utc_ns_, h);
  h.first_frame = next_frame_;
  h.frames = frames;
  h.channels = channels;
  h.format = format_.format;
  h.t_first_utc_ns = start_utc_ns_ + frames_to_ns(next_frame_, rate);
  h.t_capture_mono_ns = now;
  next_frame_ += frames;
  return ReadStatus::kOk;
}

}  // namespace vigil
