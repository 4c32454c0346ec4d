// CaptureProgress: how much of the chunk being captured is in memory already, for a reader that
// starts moving it (the pipeline's copy to the GPU) before the chunk is complete, as a DMA-fed ADC
// fills it. One writer (the capture thread, through its source), one reader (the pipeline thread).
// Lock-free: a generation, bumped for every chunk begun (and when a source starts one over), tells
// the reader whether the frames it saw belong to the chunk it has been following; a snapshot taken
// across a bump is refused (read generation, chunk, frames, generation again, as a seqlock does).
#pragma once

#include <atomic>
#include <cstdint>

#include "acquisition/chunk.hpp"

namespace vigil {

class CaptureProgress {
 public:
  // Capture thread. begin(): a chunk is about to be read into `chunk` (null: into memory nobody will
  // be handed, whose progress is not published). publish(): its frames [0, frames) are complete
  // and stay as they are (non-decreasing within a generation). restart(): the source starts the
  // same chunk over (an overrun): what was published is void.
  void begin(Chunk* chunk) noexcept {
    // A seqlock's write: odd while the chunk and its count change, even again after.
    const uint64_t s = sequence_.load(std::memory_order_relaxed);
    sequence_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    chunk_.store(chunk, std::memory_order_relaxed);
    frames_.store(0, std::memory_order_relaxed);
    sequence_.store(s + 2, std::memory_order_release);
  }
  void publish(uint32_t frames) noexcept {
    if (chunk_.load(std::memory_order_relaxed)) frames_.store(frames, std::memory_order_release);
  }
  void restart() noexcept { begin(chunk_.load(std::memory_order_relaxed)); }
  // Capture thread: the generation of the chunk being read (the capture loop stamps it on the
  // chunk it hands over: Chunk::capture_generation).
  uint64_t generation() const noexcept { return sequence_.load(std::memory_order_relaxed) / 2; }

  // Reader: the chunk being captured, its generation and its complete frames; false when nothing
  // is (no chunk begun, or one nobody gets) or the writer moved on while it looked (try again).
  // The samples of those frames are visible to the caller once this returns true.
  struct Snapshot {
    const Chunk* chunk = nullptr;
    uint64_t generation = 0;
    uint32_t frames = 0;
  };
  bool snapshot(Snapshot& s) const noexcept {
    const uint64_t before = sequence_.load(std::memory_order_acquire);
    if (before & 1) return false;
    const Chunk* c = chunk_.load(std::memory_order_relaxed);
    const uint32_t f = frames_.load(std::memory_order_acquire);  // pairs with publish(): the samples
    std::atomic_thread_fence(std::memory_order_acquire);
    if (sequence_.load(std::memory_order_relaxed) != before || !c) return false;
    s = {c, before / 2, f};
    return true;
  }

 private:
  std::atomic<uint64_t> sequence_{0};  // 2 x the generation; odd while begin() runs
  std::atomic<Chunk*> chunk_{nullptr};
  std::atomic<uint32_t> frames_{0};
};

}  // namespace vigil
