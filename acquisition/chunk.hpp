// Chunk: a fixed-size block of interleaved frames from one source, in pool memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/sample_format.hpp"

namespace vigil {

namespace chunk_flags {
constexpr uint32_t kOverrunBefore = 1u << 0;  // frames were lost just before this chunk
constexpr uint32_t kClipped = 1u << 1;        // at least one sample at full scale
constexpr uint32_t kNonFinite = 1u << 2;      // at least one NaN/Inf sample (replaced)
constexpr uint32_t kDeadlineMissed = 1u << 3; // finished after its deadline
constexpr uint32_t kSourceOverrun = 1u << 4;  // the device itself overran (ALSA -EPIPE) before it
constexpr uint32_t kSourceResumed = 1u << 5;  // the device came back (reopened) before it
constexpr uint32_t kClockStepped = 1u << 6;   // the wall clock stepped: its UTC time line moved by clock_step_ns
}  // namespace chunk_flags

struct ChunkHeader {
  uint32_t source_id = 0;
  uint64_t sequence = 0;            // per source, +1 for every chunk handed over
  uint64_t first_frame = 0;         // index of the first frame since the source started
  uint32_t frames = 0;              // frames in this chunk
  uint32_t channels = 0;
  SampleFormat format = SampleFormat::kInt16;
  uint32_t flags = 0;               // chunk_flags
  uint64_t frames_lost_before = 0;  // frames dropped between the previous chunk and this one
  int64_t t_first_utc_ns = 0;       // UTC time of the first frame (signal time line)
  int64_t t_capture_mono_ns = 0;    // CLOCK_MONOTONIC when the last frame was captured
  int64_t clock_step_ns = 0;        // kClockStepped: how far t_first_utc_ns moved against the frame count
};

struct Chunk {
  ChunkHeader header;
  std::byte* data = nullptr;  // header.frames * header.channels interleaved samples
  size_t capacity_bytes = 0;
  // The CaptureProgress generation it was read under (the capture loop's; 0 without one): what
  // the pipeline matches against the frames it moved while the chunk was being captured.
  uint64_t capture_generation = 0;
};

}  // namespace vigil
