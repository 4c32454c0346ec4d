// StreamFormat: what a stream of samples between stages, and out of vigild, is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil {

// The most channels a source may have: a data stream's id holds the channel in 12 bits
// (wire/stream_id.hpp), so a lane of every channel can still be told apart on the wire.
constexpr uint32_t kMaxChannels = 4096;

// A stream of samples: `bands` x `channels` lanes at one rate. bands == 0 means the stage emits
// events only (a detector).
struct StreamFormat {
  double rate_hz = 0;
  uint32_t channels = 0;
  uint32_t bands = 0;
  std::vector<std::string> band_names;  // bands entries ("" for the raw input)
  // Samples by which this stream lags the input: output sample k belongs to input frame
  // k - delay_frames. Outputs and detectors correct times and frame indices by it.
  uint32_t delay_frames = 0;
};

}  // namespace vigil
