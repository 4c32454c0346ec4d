// StagedInputHistory: a CUDA stage's InputHistory, the newest input frames its CPU twin primes
// from after a CUDA error. In copy mode it is filled from the device without the host copying:
// - up to kKernelBytes a chunk (by_kernel()), enqueue() launches a kernel (cuda/lane_ring) that
//   writes the chunk's newest frames (no more than priming reads) straight into the page-locked,
//   mapped ring, from the position a mapped cell holds. The kernel's parameters are the same for
//   every chunk, so a stage can capture it into its CUDA graph and set the cell before each
//   replay (arm()). (On a branch of the graph beside the stage's kernels it cost more than it
//   saved: the next stage's CUDA calls took twice as long, S2 on the H100, 2026-11-25);
// - larger ones take a device snapshot after the chunk's kernels, and a stream of the history's
//   own copies it into the ring while the stages after it run (they are not held up by it).
// commit() makes them the newest once the chunk has succeeded, and newest() waits for them to land
// (settle()) before it reads: nothing on the real-time path waits for the side stream's copies.
// The ring is one chunk larger than what priming reads, so a write under way never touches those
// frames. In mapped mode, or for a chunk that enqueued nothing, commit() copies the host block.
// Thread: the pipeline thread. Only built with CUDA. Header-only.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/lane_ring.cuh"
#include "cuda/pinned_buffer.hpp"
#include "stages/block.hpp"
#include "stages/input_history.hpp"

namespace vigil {

class StagedInputHistory {
 public:
  StagedInputHistory() = default;
  ~StagedInputHistory() { release(); }
  StagedInputHistory(const StagedInputHistory&) = delete;
  StagedInputHistory& operator=(const StagedInputHistory&) = delete;

  // `keep` frames of `lanes` lanes for priming; chunks of up to max_frames; from_device: copy
  // mode (the page-locked ring; the kernel's cell, or the snapshot and the stream). Allocates;
  // throws CudaError.
  void assign(uint32_t lanes, uint32_t keep, uint32_t max_frames, bool from_device) {
    release();
    lanes_ = lanes;
    max_frames_ = max_frames;
    from_device_ = from_device;
    kernel_ = false;
    pending_ = 0;
    landing_ = false;
    if (!from_device) {
      ring_.assign(lanes, keep);
      return;
    }
    snap_frames_ = std::min(keep, max_frames);
    kernel_ = size_t(lanes) * snap_frames_ * sizeof(float) <= kKernelBytes;
    pinned_ = cuda::PinnedBuffer(size_t(lanes) * (keep + max_frames) * sizeof(float), kernel_);
    ring_.assign(lanes, keep + max_frames, pinned_.host<float>());
    if (kernel_) {
      cell_ = cuda::PinnedBuffer(sizeof(uint32_t), true);
      *cell_.host<uint32_t>() = 0;
      return;
    }
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_snap_), size_t(lanes) * snap_frames_ * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&ev_snapped_, cudaEventDisableTiming));
    VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&ev_landed_, cudaEventDisableTiming));
  }
  bool from_device() const noexcept { return from_device_; }
  // Copy mode with the kernel (above): enqueue() may be captured into a graph, with arm() before
  // each replay.
  bool by_kernel() const noexcept { return kernel_; }

  // On `stream`, after the chunk's kernels: its newest frames (up to `keep`) from `src` (device,
  // lane l at src + l * max_frames) into the snapshot, and from there, on the history's stream,
  // into the ring. `stream` goes on as soon as the snapshot is taken. RT-safe.
  // By kernel: the ring write on `stream` (which may be being captured), landed when the stage's
  // stream syncs. RT-safe.
  cudaError_t enqueue(const float* src, uint32_t frames, cudaStream_t stream) noexcept {
    const uint32_t n = std::min(frames, snap_frames_);
    if (kernel_) {
      arm(frames);
      if (n == 0) return cudaSuccess;  // an empty chunk: nothing to write (the kernel takes none)
      cuda::LanesToRingParams p;
      p.d_src = src;
      p.src_stride = max_frames_;
      p.first = frames - n;
      p.frames = n;
      p.lanes = lanes_;
      p.ring = pinned_.device<float>();
      p.ring_frames = ring_.frames();
      p.position = cell_.device<uint32_t>();
      return cuda::launch_lanes_to_ring(p, stream);
    }
    const size_t snap_pitch = size_t(snap_frames_) * sizeof(float), pitch = size_t(max_frames_) * sizeof(float);
    // The snapshot is free once the last chunk's copy out of it has landed.
    VIGIL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, ev_landed_, 0));
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(d_snap_, snap_pitch, src + (frames - n), pitch, n * sizeof(float),
                                                 lanes_, cudaMemcpyDeviceToDevice, stream));
    VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_snapped_, stream));
    VIGIL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, ev_snapped_, 0));
    InputHistory::Piece p[2];
    const unsigned count = ring_.pieces(n, p);
    const size_t ring_pitch = size_t(ring_.frames()) * sizeof(float);
    for (unsigned i = 0; i < count; ++i)
      VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(ring_.data() + p[i].dst, ring_pitch, d_snap_ + p[i].src, snap_pitch,
                                                   p[i].count * sizeof(float), lanes_, cudaMemcpyDeviceToHost, stream_));
    VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_landed_, stream_));
    pending_ = n;
    return cudaSuccess;
  }
  // By kernel, before a replay of a graph that captured enqueue() for chunks of `frames` frames:
  // where its frames go, and that they are this chunk's. RT-safe.
  void arm(uint32_t frames) noexcept {
    *cell_.host<uint32_t>() = ring_.head();
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the cell's store before the launch's
    pending_ = std::min(frames, snap_frames_);
  }
  // After a chunk that succeeded (its stream synchronised): what enqueue() copied (once landed),
  // or else `in`'s frames on the host, are the newest. discard(): the chunk failed, or a new one
  // starts. RT-safe.
  void commit(const Block& in) noexcept {
    if (pending_) {
      ring_.advance(pending_);
      landing_ = !kernel_;  // the side stream's copies may still be on their way
    } else {
      ring_.remember(in.data, in.stride, in.frames);
    }
    pending_ = 0;
  }
  void discard() noexcept { pending_ = 0; }
  // Waits for the last committed chunk's frames to land in the ring. An error (the device failed
  // while they were on their way) leaves them unsure: complete() says so. RT-safe (blocks only
  // while a copy is under way).
  cudaError_t settle() noexcept {
    if (!landing_) return cudaSuccess;
    const cudaError_t e = cudaEventSynchronize(ev_landed_);
    if (e == cudaSuccess) landing_ = false;
    return e;
  }
  bool complete() const noexcept { return !landing_; }

  // The newest k frames of each lane, oldest first (InputHistory::newest), after settle(). RT-safe.
  void newest(uint32_t k, float* dst, size_t dst_stride) noexcept {
    settle();
    ring_.newest(k, dst, dst_stride);
  }
  void clear() noexcept {
    if (stream_) cudaStreamSynchronize(stream_);  // no copy may land after the ring is cleared
    landing_ = false;
    ring_.clear();
    pending_ = 0;
  }

 private:
  void release() noexcept {
    if (stream_) cudaStreamSynchronize(stream_);
    if (ev_snapped_) cudaEventDestroy(ev_snapped_);
    if (ev_landed_) cudaEventDestroy(ev_landed_);
    if (stream_) cudaStreamDestroy(stream_);
    if (d_snap_) cudaFree(d_snap_);
    ev_snapped_ = ev_landed_ = nullptr;
    stream_ = nullptr;
    d_snap_ = nullptr;
  }

  InputHistory ring_;
  cuda::PinnedBuffer pinned_;  // the ring's memory in copy mode (mapped, by kernel)
  cuda::PinnedBuffer cell_;    // by kernel: the ring position the next write starts at (mapped)
  float* d_snap_ = nullptr;    // [lanes][snap_frames_]: a chunk's newest frames on their way
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev_snapped_ = nullptr, ev_landed_ = nullptr;
  uint32_t lanes_ = 0, max_frames_ = 0, snap_frames_ = 0;
  uint32_t pending_ = 0;  // frames enqueue() copied for the chunk under way
  bool landing_ = false;  // the last committed chunk's frames may still be on their way
  // Up to kKernelBytes a chunk by kernel (S2's FIR history: 64 lanes x 1024 frames); larger ones
  // through the snapshot and the side stream, which the stage does not wait for (by kernel, S1's
  // 780 KB denoiser history at 16 channels took its stage 71 -> 87 us of GPU time, H100; its FIR
  // history at 800 channels is 26 MB a chunk).
  static constexpr size_t kKernelBytes = size_t(256) << 10;
  bool kernel_ = false;  // copy mode by kernel; else copy mode by the snapshot and side stream
  bool from_device_ = false;
};

}  // namespace vigil
