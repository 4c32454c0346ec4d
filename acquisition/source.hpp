// Source: where chunks come from (synthetic, file, ALSA, VITA 49 over UDP). Thread: read() runs on
// the capture thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "acquisition/capture_progress.hpp"
#include "acquisition/chunk.hpp"

namespace vigil {

struct SourceFormat {
  double rate_hz = 0;        // frames per second
  uint32_t channels = 0;
  SampleFormat format = SampleFormat::kInt16;
  uint32_t chunk_frames = 0; // frames in every chunk read() delivers (the last one may be short)
  float scale = 1.0f;        // multiplies a raw sample to give the engineering value
};

// kIdle: nothing to deliver yet and nothing wrong (a network source waiting for its senders):
// the capture loop looks at its stop flag and reads again.
enum class ReadStatus { kOk, kEnd, kError, kIdle };

class Source {
 public:
  virtual ~Source() = default;
  virtual SourceFormat format() const noexcept = 0;
  virtual std::string_view kind() const noexcept = 0;
  // Fills chunk.data and header fields first_frame, frames, channels, format, t_first_utc_ns,
  // t_capture_mono_ns. Returns when the chunk is complete (paced sources wait for it).
  // kEnd: nothing more will come (chunk not filled). RT-safe: no allocation, no locks.
  virtual ReadStatus read(Chunk& chunk) noexcept = 0;
  // Device overruns recovered so far (sources that can overrun). Any thread.
  virtual uint64_t overruns() const noexcept { return 0; }
  // Paced sources with no device (synthetic, a replayed file): chunks delivered more than one
  // chunk period after their last frame was due (Pace). Any thread.
  virtual uint64_t late_chunks() const noexcept { return 0; }
  // The device is gone (retrying). Any thread.
  virtual bool down() const noexcept { return false; }
  // False for a source with no clock of its own (a file or synthetic source at rate_factor 0):
  // nothing is lost by waiting for it, so the capture loop waits for a free chunk instead of
  // dropping one (a replay as fast as possible processes every sample).
  virtual bool paced() const noexcept { return true; }
  // Before the first read (capture thread): where read() may publish how much of the chunk is
  // complete while it waits for the rest (CaptureProgress::publish), so that the pipeline can
  // start moving it. A source that ignores it (the default) is read chunk by chunk, as before.
  virtual void set_progress(CaptureProgress* /*progress*/) noexcept {}
  // What this kind of source counts besides (a network source's packets lost, ...), for the
  // status' source entry. Any thread (atomics only; may throw: allocation).
  virtual std::vector<std::pair<const char*, uint64_t>> counts() const { return {}; }
};

}  // namespace vigil
