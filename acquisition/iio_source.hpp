// IioSource: captures from a Linux IIO ADC through libiio (built with VIGIL_HAVE_IIO): an SPI or
// parallel ADC board's driver (the AD7768 family and the like) on this machine (`local:`), or one
// served by iiod on another (`ip:HOST`), or over USB (`usb:`). Uses only what libiio 0.23 (Ubuntu
// 22.04, JetPack 6) and 0.24 (Debian 12) both have.
//
// - Channels by id (`voltage0`, ...), all signed, of one size class: up to 16 bits they arrive as
//   int16, up to 32 as int32, left-justified (a 24-bit sample's full scale is the int32 one's, as
//   ALSA's S24 is), so that clipping is counted alike; the format comes from each channel's
//   scan_elements type (endianness, bits, shift, sign), decoded by libiio.
// - Scale: each channel's `scale` attribute read as text (millivolts per code, the IIO ABI), the
//   same for every channel; SourceFormat::scale then gives volts. (Over `ip:`, libiio 0.24 prints
//   the scale it parsed with %f, losing digits: the attribute text keeps them.)
// - Rate: `sample_rate_hz` written to `sampling_frequency` where given, read back and checked.
// - Time: a `timestamp` channel when the device has one (its first sample of each refill, on the
//   device's `current_timestamp_clock`); otherwise the monotonic time of each refill. The first
//   refill anchors a frame-counted time line, as the ALSA source's; a timestamp that jumps, or a
//   refill later than the kernel buffers could hold, is frames lost: counted and flagged on the
//   next chunk as an ALSA overrun is. A device that fails (gone, its buffer in error, or no samples
//   for ten chunk periods and at least a second) is closed and reopened from read() with capped
//   exponential backoff (0.1 s doubling to 5 s).
// Thread: constructed on the main thread; read() on the capture thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "acquisition/device_clock_offset.hpp"
#include "acquisition/reopen_backoff.hpp"
#include "acquisition/source.hpp"
#include "acquisition/wall_clock.hpp"

struct iio_context;
struct iio_device;
struct iio_channel;
struct iio_buffer;

namespace vigil {

struct IioSourceSpec {
  std::string uri = "local:";         // local:, ip:HOST, usb:...
  std::string device;                 // its name or id (iio:device0)
  std::vector<std::string> channels;  // channel ids; empty: every signed input scan element but the timestamp
  double sample_rate_hz = 0;          // > 0: written to sampling_frequency, read back, checked
  uint32_t chunk_frames = 1024;       // samples a refill
  uint32_t kernel_buffers = 4;
  bool operator==(const IioSourceSpec&) const = default;
};

class IioSource final : public Source {
 public:
  // Opens the context and device, checks and enables the channels, sets the rate, creates the
  // buffer. Throws std::runtime_error naming the URI, device, channel and attribute at fault.
  explicit IioSource(IioSourceSpec spec);
  ~IioSource() override;
  IioSource(const IioSource&) = delete;
  IioSource& operator=(const IioSource&) = delete;

  SourceFormat format() const noexcept override { return format_; }
  std::string_view kind() const noexcept override { return "iio"; }
  ReadStatus read(Chunk& chunk) noexcept override;
  uint64_t overruns() const noexcept override { return gaps_.load(std::memory_order_relaxed); }
  bool down() const noexcept override { return down_.load(std::memory_order_relaxed); }
  std::vector<std::pair<const char*, uint64_t>> counts() const override;
  const std::string& description() const noexcept { return description_; }  // for the start log

 private:
  IioSourceSpec spec_;
  SourceFormat format_;
  std::string description_;
  iio_context* ctx_ = nullptr;
  iio_device* dev_ = nullptr;
  std::vector<iio_channel*> chans_;
  iio_channel* timestamp_ = nullptr;
  iio_buffer* buf_ = nullptr;
  std::vector<uint32_t> left_shift_;  // per channel: to left-justify its bits in the chunk's type
  bool realtime_timestamps_ = true;   // the timestamp channel's clock: CLOCK_REALTIME, else monotonic
  uint64_t next_frame_ = 0;
  bool anchored_ = false;
  int64_t start_mono_ns_ = 0, start_utc_ns_ = 0, start_device_ns_ = 0;
  WallClockWatch wall_clock_;
  DeviceClockOffset offset_;
  bool resumed_ = false;
  ReopenBackoff backoff_;
  int64_t last_data_mono_ns_ = 0;  // when the last refill brought samples
  std::atomic<bool> down_{false};
  std::atomic<uint64_t> gaps_{0}, frames_lost_{0}, reopens_{0}, refills_{0};

  void open();   // throws std::runtime_error; leaves everything closed on failure
  void close() noexcept;
  void go_down() noexcept;
  bool try_reopen() noexcept;
};

}  // namespace vigil
