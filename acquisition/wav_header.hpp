// WAV header reading shared by the file source (replay) and sample_file (vigil-dsp): where the
// samples are and how they are stored. Which formats a caller accepts is the caller's business.
#pragma once

#include <cstdint>
#include <string>

namespace vigil {

struct WavHeader {
  uint16_t format = 0;       // 1 PCM, 3 IEEE float (WAVE_FORMAT_EXTENSIBLE resolved to its subformat)
  uint16_t channels = 0;
  uint32_t rate_hz = 0;
  uint16_t bits = 0;         // per sample
  uint64_t data_offset = 0;  // bytes from the start of the file
  uint64_t data_bytes = 0;   // as declared, cut to what the file holds (a truncated file keeps what it has)
  uint64_t data_bytes_declared = 0;  // what the data chunk's header says
};

// Throws std::runtime_error "PATH: why" (cannot open, not RIFF/WAVE, truncated or missing fmt,
// no data chunk, 0 channels or rate).
WavHeader read_wav_header(const std::string& path);

}  // namespace vigil
