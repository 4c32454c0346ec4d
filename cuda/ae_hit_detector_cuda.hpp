// AeHitDetectorCuda: owns the device state and result buffers of the CUDA AE hit engine.
// Compiles with the host compiler. Thread: one owner thread at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "dsp/ae_hit_detector.hpp"

namespace vigil::cuda {

class AeHitDetectorCuda {
 public:
  // lanes: 1..65536; capacity: hits (and level intervals) one call may report; more are counted
  // in dropped(). poison: fill result buffers with 0xFF before every call (tests).
  AeHitDetectorCuda(const AeSampleParams& params, uint32_t lanes, uint32_t capacity = 65536, bool poison = false);
  ~AeHitDetectorCuda();
  AeHitDetectorCuda(const AeHitDetectorCuda&) = delete;
  AeHitDetectorCuda& operator=(const AeHitDetectorCuda&) = delete;

  // Device-resident input (lane l at d_x + l * stride), asynchronous on `stream`. RT-safe.
  cudaError_t enqueue(const float* d_x, size_t stride, uint32_t frames, uint64_t first_frame,
                      cudaStream_t stream) noexcept;
  // Waits for the last enqueue and appends its hits and level intervals, each sorted by lane then
  // frame. Throws CudaError.
  void collect(std::vector<AeHit>& hits, std::vector<AeLevel>& levels, cudaStream_t stream);

  void reset();
  uint64_t dropped() const noexcept { return dropped_; }

 private:
  AeSampleParams params_;
  uint32_t lanes_, capacity_;
  bool poison_;
  AeChannelState* d_state_ = nullptr;
  AeHit* d_hits_ = nullptr;
  AeLevel* d_levels_ = nullptr;
  unsigned int* d_counts_ = nullptr;
  uint64_t dropped_ = 0;
};

}  // namespace vigil::cuda
