// CudaTwin: what every CUDA stage does about its CPU twin, in one place. The chunk count and the
// test's injected fault (pipeline.test_cuda_fail_at_chunk); a CUDA error from reset() or a reload,
// deferred to the next chunk; the producer whose device output the stage reads, and bringing a
// chunk's input back to the host for the twin; and the hand-over itself: the error cleared and
// counted, the stage on its twin from then on, the `backend` event (state fallback), one log
// line. Each stage keeps only what it alone knows: how its twin is primed (an input history, the
// GPU's last lane states, nothing). Only built with CUDA.
// Thread: the pipeline thread, but on_cpu(), errors() and last_error() (any thread: atomics).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "core/rt_log.hpp"
#include "cuda/fault_injection.hpp"
#include "stages/cuda_stage_events.hpp"
#include "stages/event_record.hpp"
#include "stages/stage.hpp"

namespace vigil {

class CudaTwin {
 public:
  // kind: the stage kind for the log ("fir_bank"); index: the stage's place in the graph;
  // fail_at_chunk: the test's fault on this chunk of the GPU path (1-based; 0: never).
  CudaTwin(const char* kind, uint16_t index, uint64_t fail_at_chunk) noexcept
      : kind_(kind), index_(index), fail_at_chunk_(fail_at_chunk) {}

  bool on_cpu() const noexcept { return on_cpu_.load(std::memory_order_relaxed); }
  uint64_t errors() const noexcept { return errors_.load(std::memory_order_relaxed); }
  int last_error() const noexcept { return last_error_.load(std::memory_order_relaxed); }

  // A chunk on the GPU path. take_error(): the error to hand over on now, if any (one deferred
  // from a reset or a reload, else the injected fault on its chunk, launched on `stream` so that
  // it fails as a real launch would), cudaSuccess otherwise. begin_chunk(): both. RT-safe.
  void count_chunk() noexcept { ++chunks_; }
  cudaError_t take_error(cudaStream_t stream) noexcept {
    cudaError_t e = deferred_;
    deferred_ = cudaSuccess;
    if (e == cudaSuccess && fail_at_chunk_ && chunks_ == fail_at_chunk_) e = cuda::launch_failing_kernel_for_test(stream);
    return e;
  }
  cudaError_t begin_chunk(cudaStream_t stream) noexcept {
    count_chunk();
    return take_error(stream);
  }
  // The GPU part of a two-phase stage's begin() (GpuStage::begin): the chunk begun, then
  // launch(); true when its work is queued, else `done` is fall_back(error)'s status. RT-safe.
  template <class Launch, class FallBack>
  bool queue(cudaStream_t stream, Launch&& launch, FallBack&& fall_back, StageStatus& done) noexcept {
    cudaError_t e = begin_chunk(stream);
    if (e == cudaSuccess) e = launch();
    if (e == cudaSuccess) return true;
    done = fall_back(e);
    return false;
  }
  // reset() or a reload failed on the device: the next chunk hands over. An error already
  // deferred stays. RT-safe.
  void defer(cudaError_t e) noexcept {
    if (e != cudaSuccess && deferred_ == cudaSuccess) deferred_ = e;
  }

  // Settings the twin takes whole (no CUDA error: no event, nothing counted): on the CPU from the
  // start. Main thread, at prepare().
  void start_on_cpu(bool on) noexcept { on_cpu_.store(on, std::memory_order_relaxed); }

  // The stage whose output is this stage's input, to read on the device (GpuStage::bind_producer).
  void bind_producer(GpuStage* producer) noexcept { producer_ = producer; }
  GpuStage* producer() const noexcept { return producer_; }
  // The chunk's input on the host for the twin: a producer that kept it on the device copies it
  // back. False where even that fails (the GPU is gone): the chunk is lost to this stage. RT-safe.
  bool input_on_host(uint32_t frames) noexcept { return !producer_ || producer_->make_output_host_valid(frames); }

  // The hand-over to the CPU twin on `error`: cleared (a non-sticky error must not reach other
  // stages' checks), counted, the stage on its twin from now on, the `backend` event, and a log
  // line ending in `note` (why the twin's priming may be short, or ""). RT-safe.
  void hand_over(const Exec& exec, cudaError_t error, const char* note = "") noexcept {
    cudaGetLastError();
    errors_.fetch_add(1, std::memory_order_relaxed);
    last_error_.store(int(error), std::memory_order_relaxed);
    on_cpu_.store(true, std::memory_order_relaxed);
    emit_event(exec, cuda_fallback_event(index_, exec, error));
    if (exec.log)
      exec.log->printf(3, "%s stage %u: CUDA error %s (%s) at frame %llu: continuing on the CPU twin%s", kind_,
                       unsigned(index_), cudaGetErrorName(error), cudaGetErrorString(error),
                       (unsigned long long)exec.chunk.first_frame, note);
  }

 private:
  const char* kind_;
  uint16_t index_;
  uint64_t fail_at_chunk_;
  uint64_t chunks_ = 0;
  cudaError_t deferred_ = cudaSuccess;
  GpuStage* producer_ = nullptr;
  std::atomic<bool> on_cpu_{false};
  std::atomic<uint64_t> errors_{0};
  std::atomic<int> last_error_{0};
};

}  // namespace vigil
