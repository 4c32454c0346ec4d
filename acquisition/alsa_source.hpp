// AlsaSource: captures from an ALSA PCM (libasound; built with VIGIL_HAVE_ALSA). Negotiates the
// format, rate, channels, period and buffer, logging what was asked and what was granted, and
// adapts or (strict) refuses. Reads each period straight into the pool chunk (S24_3LE is widened
// to 32-bit in place). Timestamps: the first chunk anchors a frame-counted time line on the
// device's status timestamp (monotonic, mapped to UTC); later chunks follow it sample-exactly.
// An overrun (-EPIPE) is recovered, counted, and the frames lost (estimated from the status
// timestamps) are flagged on the next chunk. A device that goes away is reopened with backoff.
// Thread: capture thread (read()).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "acquisition/alsa_spec.hpp"
#include "acquisition/device_clock_offset.hpp"
#include "acquisition/reopen_backoff.hpp"
#include "acquisition/source.hpp"
#include "acquisition/wall_clock.hpp"

typedef struct _snd_pcm snd_pcm_t;

namespace vigil {

class AlsaSource final : public Source {
 public:
  // Opens and configures the device (the system's ALSA configuration, or `alsa_config` text
  // loaded in its place: tests). Throws std::runtime_error naming the device and what failed.
  explicit AlsaSource(AlsaSpec spec, const std::string& alsa_config = "");
  ~AlsaSource() override;

  SourceFormat format() const noexcept override { return format_; }
  std::string_view kind() const noexcept override { return "alsa"; }
  ReadStatus read(Chunk& chunk) noexcept override;

  const AlsaSpec& granted() const noexcept { return granted_; }  // what the device agreed to
  const std::string& negotiation() const noexcept { return negotiation_; }  // one line for the log
  uint64_t overruns() const noexcept override { return overruns_.load(std::memory_order_relaxed); }
  // Device gone (-ENODEV, -EBADFD, a failed recover, or 4 overruns in one read): closed, reopened with capped exponential
  // backoff (0.1 s doubling to 5 s) from read(); the frames missed are measured and flagged.
  bool down() const noexcept override { return down_.load(std::memory_order_relaxed); }
  uint64_t reopens() const noexcept { return reopens_.load(std::memory_order_relaxed); }

 private:
  AlsaSpec spec_, granted_;
  std::string negotiation_;
  snd_pcm_t* pcm_ = nullptr;
  void* config_ = nullptr;  // snd_config_t* when alsa_config was given
  SourceFormat format_;
  uint32_t bytes_per_frame_ = 0;  // on the device
  uint64_t next_frame_ = 0, end_frame_ = UINT64_MAX;
  bool anchored_ = false;
  int64_t start_mono_ns_ = 0, start_utc_ns_ = 0;  // time of frame 0
  WallClockWatch wall_clock_;                     // steps of the UTC clock move start_utc_ns_
  DeviceClockOffset offset_;                      // where chunks lately arrive against the frame count
  void open_and_configure();  // throws std::runtime_error
  void go_down() noexcept;
  bool try_reopen() noexcept;
  bool overrun_pending_ = false, gap_pending_ = false;
  ReopenBackoff backoff_;
  std::atomic<bool> down_{false};
  std::atomic<uint64_t> overruns_{0}, reopens_{0};
};

}  // namespace vigil
