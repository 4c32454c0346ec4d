// RT: capture thread.
#include "acquisition/capture_loop.hpp"

#include <algorithm>
#include <string_view>
#include <thread>

namespace vigil {

CaptureLoop::CaptureLoop(Source& source, SpscQueue<Chunk*>& free_chunks, SpscQueue<Chunk*>& full_chunks,
                         size_t chunk_bytes, uint32_t source_id)
    : source_(source), free_(free_chunks), full_(full_chunks), scratch_memory_(chunk_bytes), source_id_(source_id) {
  scratch_.data = scratch_memory_.data();
  scratch_.capacity_bytes = chunk_bytes;
}

void CaptureLoop::track_progress() noexcept {
  tracking_ = true;
  source_.set_progress(&progress_);
}

void CaptureLoop::run() noexcept {
  uint64_t lost = 0;       // frames dropped since the last chunk handed over
  int64_t step = 0;        // clock_step_ns of chunks dropped since then
  Chunk* held = nullptr;   // a free chunk we took but have not handed over yet
  uint64_t failing = 0;    // consecutive read errors
  uint64_t dropping = 0;   // consecutive chunks dropped
  // An unpaced source's batch (below): a quarter of the chunks free at the start (the pool).
  const size_t batch = std::max<size_t>(1, free_.read_available() / 4);
  while (!stop_.load(std::memory_order_relaxed)) {
    if (!held) free_.pop(held);
    if (!held && !source_.paced()) {  // no clock to keep up with: wait for the pipeline
      // ... until a quarter of the pool is free, then fill it at once. Polling every 50 us, this
      // thread took turns on the cores the pipeline and output threads need (woken for every
      // freed chunk, it would cost the pipeline a system call a chunk): S3 unpaced on two cores,
      // median 305x then, 351x now (bench/results/LOG.md §11). The timeout looks at stop_, and
      // takes what is free where fewer chunks come back (some held elsewhere).
      while (!held && !stop_.load(std::memory_order_relaxed)) {
        free_.wait_for_items(batch, 1'000'000);
        free_.pop(held);
      }
      if (!held) break;
    }
    Chunk& target = held ? *held : scratch_;
    target.header.flags = 0;  // a source sets its own loss (an overrun) before ours is added
    target.header.frames_lost_before = 0;
    target.header.clock_step_ns = 0;
    if (tracking_) progress_.begin(held);  // the scratch chunk's progress is nobody's
    const ReadStatus status = source_.read(target);
    target.capture_generation = tracking_ ? progress_.generation() : 0;
    if (status == ReadStatus::kEnd) break;
    if (status == ReadStatus::kIdle) continue;
    if (status == ReadStatus::kError) {
      counters_.read_errors.fetch_add(1, std::memory_order_relaxed);
      if (failing++ == 0) {
        const std::string_view kind = source_.kind();
        log_.printf(3, "capture: the %.*s source failed to read; retrying every 10 ms", int(kind.size()), kind.data());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (failing) {
      log_.printf(5, "capture: reading again after %llu failed reads", (unsigned long long)failing);
      failing = 0;
    }
    if (!held) {
      if (dropping++ == 0) log_.printf(4, "capture: no free pool chunk (the pipeline is behind): dropping chunks");
      lost += target.header.frames;
      step += target.header.clock_step_ns;  // the time line moved in a dropped chunk: say so on the next
      counters_.chunks_dropped.fetch_add(1, std::memory_order_relaxed);
      counters_.frames_dropped.fetch_add(target.header.frames, std::memory_order_relaxed);
      continue;
    }
    if (dropping) {
      log_.printf(5, "capture: pool chunks free again after dropping %llu chunks", (unsigned long long)dropping);
      dropping = 0;
    }
    ChunkHeader& h = held->header;
    h.source_id = source_id_;
    h.sequence = sequence_++;
    if (lost) h.flags |= chunk_flags::kOverrunBefore;
    h.frames_lost_before += lost;
    lost = 0;
    if (step) h.flags |= chunk_flags::kClockStepped;
    h.clock_step_ns += step;
    step = 0;
    const uint32_t frames = h.frames;
    // full_ has room for every pool chunk, so this push cannot fail.
    full_.push(held);
    held = nullptr;
    counters_.chunks_captured.fetch_add(1, std::memory_order_relaxed);
    counters_.frames_captured.fetch_add(frames, std::memory_order_relaxed);
  }
  // A chunk still held stays out of circulation: the pool owns its memory and nothing reads it.
  finished_.store(true, std::memory_order_release);
}

}  // namespace vigil
