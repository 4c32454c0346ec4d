// GpuKeepWarm: a few bytes of work queued on the GPU at an interval while the pipeline waits for
// its next chunk, so that the GPU is not idle long enough to answer slowly when the chunk comes
// (its clocks stay up: what sleeps is elsewhere, the copy engines among it). On one H200 host,
// queuing a copy in and a kernel cost 7 us back to back and 72 us after 20 ms without GPU work
// (S2's chunk period), the round trip with a copy out 36 against 91 us; with a kernel and a 4-byte
// copy each way every 0.5 ms on a stream of their own, 8 and 36 us. A kernel alone left the
// enqueue at 10-31 us. On another host the idle cost showed in the tail: round trip p90 77-93 ->
// 41-47 us (bench/gpu_idle_bench; bench/results/LOG.md §11, session of 2026-11-27).
// The cost: a core's few microseconds per interval on the thread that waits anyway, and a GPU
// that draws its awake power between chunks. Host C++ only; pipeline thread.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "cuda/device_buffer.hpp"
#include "cuda/pinned_buffer.hpp"

namespace vigil::cuda {

class GpuKeepWarm {
 public:
  static constexpr int64_t kDefaultIntervalNs = 500'000;

  // Throws CudaError when the stream or buffers cannot be had.
  explicit GpuKeepWarm(int64_t interval_ns = kDefaultIntervalNs);
  ~GpuKeepWarm();
  GpuKeepWarm(const GpuKeepWarm&) = delete;
  GpuKeepWarm& operator=(const GpuKeepWarm&) = delete;

  // Where interval_ns has passed since the last round and that round has finished (a GPU that
  // stopped answering never piles them up), queues one more: a 4-byte copy in, a one-thread kernel
  // counting the rounds on the device, a 4-byte copy of that count out. RT-safe, no waiting.
  // After a CUDA error it stops for good (errors() says so) and returns false.
  bool ping(int64_t now_ns) noexcept;

  // Any thread (the status).
  uint64_t rounds() const noexcept { return rounds_.load(std::memory_order_relaxed); }  // queued so far
  uint64_t errors() const noexcept { return errors_.load(std::memory_order_relaxed); }
  // The device's count of the rounds run, as the last finished round copied it out (tests).
  uint32_t rounds_run_on_device() const noexcept { return *host_.host<const uint32_t>(); }
  int64_t interval_ns() const noexcept { return interval_ns_; }

 private:
  int64_t interval_ns_;
  int64_t last_ns_ = 0;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer device_;  // [0] the count of rounds, [1] the word copied in
  PinnedBuffer host_;    // [0] the count copied out, [1] the word copied in
  std::atomic<uint64_t> rounds_{0}, errors_{0};  // written by ping() alone
};

}  // namespace vigil::cuda
