// Times of events: the UTC time of any input frame from the chunk being processed (frames
// before the chunk included, for events that complete later than they began).
#pragma once

#include <cstdint>

#include "core/clock.hpp"
#include "stages/block.hpp"

namespace vigil {

inline int64_t input_frame_utc_ns(const ChunkInfo& chunk, uint64_t input_frame, double rate_hz) noexcept {
  // Through the stream's frame-0 time, so the same frame gets the same nanosecond whichever
  // chunk an event is raised in (rounding both offsets separately could differ by 1 ns).
  return chunk.t_first_utc_ns - frames_to_ns(chunk.first_frame, rate_hz) + frames_to_ns(input_frame, rate_hz);
}

// Stream sample n of a stream that lags the input by delay_frames belongs to input frame n - delay.
inline uint64_t stream_to_input_frame(uint64_t n, uint32_t delay_frames) noexcept {
  return n >= delay_frames ? n - delay_frames : 0;
}

}  // namespace vigil
