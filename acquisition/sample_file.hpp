// Whole-file sample I/O for offline tools: raw little-endian float32 (.f32) and float64 (.f64),
// and WAV (PCM 8/16/24/32-bit, IEEE float 32/64-bit, WAVE_FORMAT_EXTENSIBLE) read as one channel.
// Thread: any; not for the real-time path (allocates, blocks on the file system).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil {

struct SampleFile {
  std::vector<double> samples;  // one channel, engineering units (WAV PCM scaled to [-1, 1))
  double rate_hz = 0;           // WAV only (0 for raw files)
  uint32_t channels = 1;        // in the file (WAV); samples holds one of them
};

// Reads PATH by its extension (.f32, .f64, .wav). channel: which WAV channel (0-based).
// Throws std::runtime_error naming the file and what is wrong (unreadable, truncated, unknown
// format, channel out of range).
SampleFile read_sample_file(const std::string& path, uint32_t channel = 0);

// Writes samples as .f32 or .f64 by PATH's extension. Throws std::runtime_error.
void write_sample_file(const std::string& path, const std::vector<double>& samples);

}  // namespace vigil
