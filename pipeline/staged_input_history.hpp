// StagedInputHistory: a CUDA stage's InputHistory, the newest input frames its CPU twin primes
// from after a CUDA error. In copy mode it is filled from the device: after a chunk's kernels,
// enqueue() copies the chunk's newest frames from where the kernels read them into a page-locked
// ring one chunk larger than what priming reads (so a copy under way never touches those frames),
// and commit() makes them the newest once the chunk has succeeded; the host copies nothing. In
// mapped mode, or for a chunk that enqueued nothing, commit() copies the host block. Thread: the
// pipeline thread. Only built with CUDA. Header-only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/pinned_buffer.hpp"
#include "pipeline/block.hpp"
#include "pipeline/input_history.hpp"

namespace vigil {

class StagedInputHistory {
 public:
  // `keep` frames of `lanes` lanes for priming; chunks of up to max_frames; from_device: copy
  // mode (the page-locked ring). Allocates; throws CudaError.
  void assign(uint32_t lanes, uint32_t keep, uint32_t max_frames, bool from_device) {
    lanes_ = lanes;
    max_frames_ = max_frames;
    from_device_ = from_device;
    pending_ = 0;
    if (!from_device) {
      ring_.assign(lanes, keep);
      return;
    }
    pinned_ = cuda::PinnedBuffer(size_t(lanes) * (keep + max_frames) * sizeof(float), false);
    ring_.assign(lanes, keep + max_frames, pinned_.host<float>());
  }
  bool from_device() const noexcept { return from_device_; }

  // On `stream`, after the chunk's kernels: its newest frames from `src` (device, lane l at
  // src + l * max_frames) into the ring. RT-safe.
  cudaError_t enqueue(const float* src, uint32_t frames, cudaStream_t stream) noexcept {
    InputHistory::Piece p[2];
    const unsigned count = ring_.pieces(frames, p);
    const size_t ring_pitch = size_t(ring_.frames()) * sizeof(float), pitch = size_t(max_frames_) * sizeof(float);
    for (unsigned i = 0; i < count; ++i)
      VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(ring_.data() + p[i].dst, ring_pitch, src + p[i].src, pitch,
                                                   p[i].count * sizeof(float), lanes_, cudaMemcpyDeviceToHost, stream));
    pending_ = frames;
    return cudaSuccess;
  }
  // After a chunk that succeeded (its stream synchronised): what enqueue() copied, or else `in`'s
  // frames on the host, are the newest. discard(): the chunk failed, or a new one starts. RT-safe.
  void commit(const Block& in) noexcept {
    if (pending_)
      ring_.advance(pending_);
    else
      ring_.remember(in.data, in.stride, in.frames);
    pending_ = 0;
  }
  void discard() noexcept { pending_ = 0; }

  // The newest k frames of each lane, oldest first (InputHistory::newest). RT-safe.
  void newest(uint32_t k, float* dst, size_t dst_stride) const noexcept { ring_.newest(k, dst, dst_stride); }
  void clear() noexcept {
    ring_.clear();
    pending_ = 0;
  }

 private:
  InputHistory ring_;
  cuda::PinnedBuffer pinned_;  // the ring's memory in copy mode
  uint32_t lanes_ = 0, max_frames_ = 0;
  uint32_t pending_ = 0;  // frames enqueue() copied for the chunk under way
  bool from_device_ = false;
};

}  // namespace vigil
