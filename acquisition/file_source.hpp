// FileSource: replays a recording chunk by chunk: WAV (PCM 16/24/32-bit, IEEE float 32-bit), FLAC
// (16/24-bit, through libsndfile when built with it) or
// SigMF (.sigmf-meta + .sigmf-data; datatypes ri16_le, ri32_le, rf32_le). Paced at the recorded
// rate times rate_factor (0: as fast as possible); optionally looped. The first frame's UTC time
// comes from the SigMF capture's core:datetime when present, else from the clock at start.
// SigMF capture segments (what Vigil's recorder writes where frames were lost) are replayed as
// they were live: a chunk never spans two segments, each segment's first chunk carries the
// segment's frame index (core:global_index), time (core:datetime) and the frames lost before it.
// A folder of SigMF recordings (a `record:` directory, its files rotated) replays as one, file
// after file in name order: each file's first capture is a segment; a file of a later run (its
// frame count from 0 again) follows after the frames its start time says were not recorded.
// Thread: capture thread (read); constructed on the main thread.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "acquisition/pace.hpp"
#include "acquisition/source.hpp"

namespace vigil {

struct FileSourceSpec {
  std::string path;          // .wav, .flac, .sigmf-meta / .sigmf-data / their base name, or a folder of SigMF
  uint32_t chunk_frames = 1024;
  double rate_factor = 1.0;  // 1 = the recorded rate, 0 = unpaced
  bool loop = false;
  bool operator==(const FileSourceSpec&) const = default;
};

// One SigMF capture segment: where it starts in the file and in the source's frame count.
struct RecordingSegment {
  uint64_t sample_start = 0;    // frame in the file
  uint64_t global_index = 0;    // the source's frame index of that frame
  bool has_datetime = false;
  int64_t utc_ns = 0;
  uint64_t frames_lost_before = 0;
  bool source_overrun = false;  // the device overran before it (vigil:source_overrun)
  int64_t clock_step_ns = 0;    // the live time line followed a wall-clock step here (vigil:clock_step_s)
};

// One data file of a recording, and where its frames lie in the replay.
struct RecordingPart {
  std::string data_path;
  uint64_t data_offset = 0;  // bytes
  uint64_t first_frame = 0;  // frames of the parts before it
  uint64_t frames = 0;
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
  std::vector<RecordingSegment> segments;  // at least one; sample_start ascending, the first at 0
  // At least one; a folder's files in order. data_path, data_offset and frames above: the
  // first part's path and offset, all parts' frames (segments' sample_start counts across them).
  std::vector<RecordingPart> parts;
  // What the files do not hold that their headers promise (a WAV cut short) or hold beyond their
  // last whole frame: one sentence each, naming the file, said by --check-config and at start.
  std::vector<std::string> cuts;
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
  bool paced() const noexcept override { return spec_.rate_factor > 0; }
  uint64_t late_chunks() const noexcept override { return pace_.late_chunks(); }
  const RecordingInfo& info() const noexcept { return info_; }

 private:
  FileSourceSpec spec_;
  RecordingInfo info_;
  std::ifstream file_;
  void* sndfile_ = nullptr;    // SNDFILE* for FLAC
  std::vector<uint8_t> raw_;   // one chunk as stored (24-bit WAV is widened from here)
  uint64_t frame_in_file_ = 0;
  uint64_t delivered_ = 0;     // frames delivered since start (across loops): the pacing
  size_t segment_ = 0;         // the segment frame_in_file_ is in
  uint64_t loops_ = 0;
  size_t part_ = 0;            // the part frame_in_file_ is in (file_ has it open)
  void open_part(size_t part); // throws std::runtime_error
  uint64_t span_frames_ = 0;   // source frames one pass through the file covers (gaps included)
  std::vector<int64_t> segment_utc_ns_;  // each segment's first frame, resolved at the first read
  Pace pace_;
  bool started_ = false;
};

}  // namespace vigil
