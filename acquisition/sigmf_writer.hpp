// SigmfWriter: writes one SigMF recording (BASE.sigmf-data + BASE.sigmf-meta) from raw input
// chunks, as they came from the source (ri16_le, ri32_le or rf32_le, interleaved channels).
// A chunk that does not follow the previous one (frames lost before it, or its time stamp off
// the extrapolated time line by more than half a sample) opens a new capture segment carrying
// core:sample_start, core:global_index (the source's frame index) and core:datetime, so a replay
// (FileSource) gives the same frame indices and times as the live run.
// The metadata is rewritten (to a temporary file, then renamed) at open, at each new segment and
// at close, so a recording cut short by a crash or a full disk is still readable.
// Thread: any one thread (the recorder thread); blocks on the file system.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "acquisition/chunk.hpp"

namespace vigil {

struct SigmfGlobal {
  double rate_hz = 0;
  uint32_t channels = 0;
  SampleFormat format = SampleFormat::kInt16;
  std::string config_sha256;  // vigil:config_sha256
  std::string description;    // core:description (the source, e.g. its device)
};

// "ri16_le" / "ri32_le" / "rf32_le".
const char* sigmf_datatype(SampleFormat f) noexcept;

class SigmfWriter {
 public:
  // Creates both files (mode 0640; the data file must not exist yet). Throws std::runtime_error
  // naming the file and the error.
  SigmfWriter(std::string base_path, SigmfGlobal global);
  ~SigmfWriter();  // closes without reporting errors: call close() to see them
  SigmfWriter(const SigmfWriter&) = delete;
  SigmfWriter& operator=(const SigmfWriter&) = delete;

  // Appends one chunk (h.frames x h.channels samples at `data`). Returns 0, or the errno of a
  // failed write (ENOSPC, EFBIG, EIO, ...): the recording then holds whole frames up to the
  // last complete chunk's metadata.
  int append(const ChunkHeader& h, const void* data) noexcept;
  // Writes the final metadata and closes the data file (after fdatasync). Returns 0 or an errno.
  int close() noexcept;

  const std::string& data_path() const noexcept { return data_path_; }
  const std::string& meta_path() const noexcept { return meta_path_; }
  uint64_t data_bytes() const noexcept { return data_bytes_; }
  uint64_t frames() const noexcept { return frames_; }
  size_t segments() const noexcept { return captures_.size(); }
  // UTC of the first frame written (0 before the first append).
  int64_t first_utc_ns() const noexcept { return first_utc_ns_; }

 private:
  int write_meta() noexcept;

  std::string data_path_, meta_path_;
  SigmfGlobal global_;
  int fd_ = -1;
  uint64_t data_bytes_ = 0, frames_ = 0;
  uint64_t next_frame_ = 0;    // the source frame index the next chunk should start at
  int64_t next_utc_ns_ = 0;    // and its time
  int64_t first_utc_ns_ = 0;
  nlohmann::json captures_ = nlohmann::json::array();
};

}  // namespace vigil
