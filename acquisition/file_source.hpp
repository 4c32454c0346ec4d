// FileSource: replays a recording chunk by chunk: WAV (PCM 16/24/32-bit, IEEE float 32-bit), FLAC
// (16/24-bit, through libsndfile when built with it) or
// SigMF (.sigmf-meta + .sigmf-data; datatypes ri16_le, ri32_le, rf32_le). Paced at the recorded
// rate times rate_factor (0: as fast as possible); optionally looped. The first frame's UTC time
// comes from the SigMF capture's core:datetime when present, else from the clock at start.
// Thread: capture thread (read); constructed on the main thread.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "acquisition/source.hpp"

namespace vigil {

struct FileSourceSpec {
  std::string path;          // .wav, or .sigmf-meta / .sigmf-data / the common base name
  uint32_t chunk_frames = 1024;
  double rate_factor = 1.0;  // 1 = the recorded rate, 0 = unpaced
  bool loop = false;
  bool operator==(const FileSourceSpec&) const = default;
};

// What a recording holds, read from its header alone.
struct RecordingInfo {
  std::string data_path;
  uint64_t data_offset = 0;  // bytes
  uint64_t frames = 0;
  double rate_hz = 0;
  uint32_t channels = 0;
  SampleFormat format = SampleFormat::kInt16;  // as delivered in chunks
  uint32_t bytes_per_sample_on_disk = 2;       // 3 for 24-bit WAV (widened to int32); 0: FLAC (libsndfile)
  bool has_datetime = false;
  int64_t start_utc_ns = 0;
};

// Reads and checks a recording's header. Throws std::runtime_error naming the file and the problem.
RecordingInfo probe_recording(const std::string& path);

class FileSource final : public Source {
 public:
  explicit FileSource(FileSourceSpec spec);  // throws std::runtime_error / std::invalid_argument
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  SourceFormat format() const noexcept override;
  std::string_view kind() const noexcept override { return "file"; }
  ReadStatus read(Chunk& chunk) noexcept override;
  const RecordingInfo& info() const noexcept { return info_; }

 private:
  FileSourceSpec spec_;
  RecordingInfo info_;
  std::ifstream file_;
  void* sndfile_ = nullptr;    // SNDFILE* for FLAC
  std::vector<uint8_t> raw_;   // one chunk as stored (24-bit WAV is widened from here)
  uint64_t frame_in_file_ = 0;
  uint64_t next_frame_ = 0;    // frames delivered since start (across loops)
  int64_t start_mono_ns_ = 0, start_utc_ns_ = 0;
  bool started_ = false;
};

}  // namespace vigil
