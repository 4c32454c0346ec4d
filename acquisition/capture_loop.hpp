// CaptureLoop: the capture thread's body. Takes free chunks, has the source fill them, hands them
// to the pipeline. Never blocks on the pipeline and never allocates: with no free chunk it reads
// into its own scratch chunk, counts those frames as dropped and flags the next chunk handed over.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "acquisition/capture_progress.hpp"
#include "acquisition/chunk.hpp"
#include "core/rt_log.hpp"
#include "acquisition/source.hpp"
#include "core/spsc_queue.hpp"

namespace vigil {

struct CaptureCounters {
  std::atomic<uint64_t> chunks_captured{0};  // handed to the pipeline
  std::atomic<uint64_t> chunks_dropped{0};   // read but dropped for want of a free chunk
  std::atomic<uint64_t> frames_captured{0};  // in chunks handed over
  std::atomic<uint64_t> frames_dropped{0};
  std::atomic<uint64_t> read_errors{0};
};

class CaptureLoop {
 public:
  // free_chunks: consumer side (chunks come back from the pipeline).
  // full_chunks: producer side (to the pipeline); its capacity must hold every pool chunk.
  // chunk_bytes: capacity of a pool chunk, for the scratch chunk.
  CaptureLoop(Source& source, SpscQueue<Chunk*>& free_chunks, SpscQueue<Chunk*>& full_chunks,
              size_t chunk_bytes, uint32_t source_id = 0);

  // Thread: capture. Runs until request_stop() or the source ends; then sets finished().
  void run() noexcept;
  void request_stop() noexcept { stop_.store(true, std::memory_order_relaxed); }
  // Acquire pairs with the release in run(): once true, every chunk is in full_chunks.
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
  const CaptureCounters& counters() const noexcept { return counters_; }
  // Lines for the journal (read errors starting and ending, chunks dropped), drained by vigild.
  RtLog& log() noexcept { return log_; }
  // Before run(): publish each pool chunk's progress while it is read (the source's, where it
  // publishes any: Source::set_progress), for the pipeline to start moving it early.
  void track_progress() noexcept;
  // The progress of the chunk being read (Chunk::capture_generation matches it on the chunk
  // handed over). Any thread.
  const CaptureProgress& progress() const noexcept { return progress_; }

 private:
  Source& source_;
  SpscQueue<Chunk*>& free_;
  SpscQueue<Chunk*>& full_;
  std::vector<std::byte> scratch_memory_;
  Chunk scratch_;
  uint32_t source_id_;
  uint64_t sequence_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  CaptureCounters counters_;
  RtLog log_;
  CaptureProgress progress_;
  bool tracking_ = false;
};

}  // namespace vigil
