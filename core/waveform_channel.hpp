// WaveformChannel: hit waveforms (transient captures) from a detector on the pipeline thread to
// the output thread: a fixed pool of buffers and two SPSC queues, nothing allocated after
// construction. The pipeline thread acquire()s and publish()es; the output thread takes next()
// and release()s.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/spsc_queue.hpp"

namespace vigil {

struct Waveform {
  uint32_t band = 0, channel = 0;
  uint64_t first_frame = 0;   // input frame of data[0] (the arrival minus the pretrigger)
  int64_t t_first_utc_ns = 0; // its UTC time
  uint32_t samples = 0;       // filled so far (== data.size() when published)
  std::vector<float> data;
};

class WaveformChannel {
 public:
  WaveformChannel(uint32_t buffers, uint32_t length) : pool_(buffers), free_(buffers), full_(buffers) {
    for (Waveform& w : pool_) {
      w.data.assign(length, 0.0f);
      free_.push(&w);
    }
  }
  Waveform* acquire() noexcept {
    Waveform* w = nullptr;
    return free_.pop(w) ? w : nullptr;
  }
  void publish(Waveform* w) noexcept { full_.push(w); }  // cannot fail: the queue holds every buffer
  Waveform* next() noexcept {
    Waveform* w = nullptr;
    return full_.pop(w) ? w : nullptr;
  }
  void release(Waveform* w) noexcept { free_.push(w); }
  uint32_t length() const noexcept { return pool_.empty() ? 0 : uint32_t(pool_[0].data.size()); }

 private:
  std::vector<Waveform> pool_;
  SpscQueue<Waveform*> free_, full_;
};

}  // namespace vigil
