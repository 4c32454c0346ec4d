// Recorder: the `record:` output. The pipeline thread offers each raw input chunk (a copy into a
// preallocated buffer: no allocation, no lock, no file access); the recorder thread writes them
// to SigMF files (SigmfWriter), starting a new file before one passes max_file_mib or
// max_file_s, and keeps every PREFIX-* recording in the directory under max_total_mib by deleting
// the oldest (when_full: delete_oldest) or by stopping (when_full: stop).
// A chunk offered while every buffer waits for the disk is dropped and counted, and the file
// gets a new capture segment after the gap. A write error (disk full, EFBIG, EIO) stops the
// recording with a `record` event; the pipeline runs on.
// Threads: offer() on the pipeline thread; run() on the recorder thread; the rest any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rt_log.hpp"
#include "acquisition/sigmf_writer.hpp"
#include "acquisition/source.hpp"
#include "core/spsc_queue.hpp"
#include "config/settings.hpp"

namespace vigil {

class Recorder {
 public:
  using PostEvent = std::function<void(const std::string& type, nlohmann::json body)>;

  // Creates the directory when missing and takes stock of the recordings already in it. Throws
  // std::runtime_error when the directory cannot be made or read.
  Recorder(const RecordSettings& settings, const SourceFormat& format, std::string config_sha256,
           std::string description, PostEvent post_event);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Pipeline thread, RT-safe: copies the chunk for the recorder thread, or counts it as dropped.
  void offer(const Chunk& chunk) noexcept;
  // Recorder thread: writes until `upstream_finished()` and every offered chunk is written.
  void run(const std::function<bool()>& upstream_finished);
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
  // Any thread: the next chunk starts a new file with this config hash (after a reload).
  void rotate_for_config(std::string config_sha256);

  nlohmann::json status_json() const;
  RtLog& log() noexcept { return log_; }  // lines for the journal (opened, stopped, deleted), drained by vigild

 private:
  struct Slot {
    ChunkHeader header;
    std::vector<std::byte> data;
  };
  void write(const Slot& slot);
  bool make_room(uint64_t bytes);  // under the total cap; false: stop
  void open_file(const ChunkHeader& first);
  void close_file(const char* why);
  void stop(const std::string& why);

  RecordSettings settings_;
  SourceFormat format_;
  PostEvent post_event_;
  std::vector<Slot> slots_;
  SpscQueue<Slot*> free_, full_;
  RtLog log_;
  std::atomic<bool> accepting_{true};
  std::atomic<bool> finished_{false};

  // Recorder thread only.
  std::unique_ptr<SigmfWriter> writer_;
  uint64_t file_index_ = 0;
  uint64_t total_bytes_ = 0;  // every PREFIX-* recording in the directory, this one included
  uint64_t max_file_bytes_ = 0, max_total_bytes_ = 0;
  uint64_t max_file_frames_ = 0;

  mutable std::mutex mu_;  // guards the fields below (status, rotation requests)
  std::string config_sha256_;
  std::string description_;
  bool rotate_requested_ = false;
  std::string state_ = "recording";  // recording | stopped
  std::string stop_reason_;
  std::string current_file_;

  std::atomic<uint64_t> chunks_written_{0}, frames_written_{0}, bytes_written_{0};
  std::atomic<uint64_t> chunks_dropped_{0}, frames_dropped_{0};
  std::atomic<uint64_t> files_written_{0}, files_deleted_{0}, write_errors_{0};
};

}  // namespace vigil
