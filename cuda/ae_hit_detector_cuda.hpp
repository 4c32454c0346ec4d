// AeHitDetectorCuda: owns the device state and result buffers of the CUDA AE hit engine.
// Compiles with the host compiler. Thread: one owner thread at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/pinned_buffer.hpp"
#include "dsp/ae_hit_detector.hpp"

namespace vigil::cuda {

class AeHitDetectorCuda {
 public:
  // lanes: 1..65536; capacity: hits (and level intervals) one call may report; more are counted
  // in dropped(). poison: fill result buffers with 0xFF before every call (tests).
  // host_results: the kernel writes hits and level intervals straight into page-locked host memory
  // (few, small writes), and each enqueue() also copies the counts and every lane's state back:
  // once the stream is synchronised, results() and state() read them with no further copy or
  // wait (RT-safe: the pipeline stage). Without it, collect() copies them.
  // max_frames: the longest call for which scratch is kept to split each lane's chunk over many
  // warps (cuda/ae_hits_segmented.cu); 0 = one warp per lane always (longer calls also run so).
  AeHitDetectorCuda(const AeSampleParams& params, uint32_t lanes, uint32_t capacity = 65536, bool poison = false,
                    bool host_results = false, uint32_t max_frames = 0);
  ~AeHitDetectorCuda();
  AeHitDetectorCuda(const AeHitDetectorCuda&) = delete;
  AeHitDetectorCuda& operator=(const AeHitDetectorCuda&) = delete;

  // Device-resident input (lane l at d_x + l * stride), asynchronous on `stream`. RT-safe.
  cudaError_t enqueue(const float* d_x, size_t stride, uint32_t frames, uint64_t first_frame,
                      cudaStream_t stream) noexcept;
  // Waits for the last enqueue and appends its hits and level intervals, each sorted by lane then
  // frame. Throws CudaError.
  void collect(std::vector<AeHit>& hits, std::vector<AeLevel>& levels, cudaStream_t stream);

  // host_results: the last enqueue()'s hits and level intervals, in the order the kernel wrote them
  // (sort them: warps finish in any order), and the state every lane was left in. Call after the
  // stream is synchronised; counts beyond the capacity go to dropped(). RT-safe.
  struct Results {
    AeHit* hits = nullptr;
    uint32_t hits_n = 0;
    AeLevel* levels = nullptr;
    uint32_t levels_n = 0;
  };
  Results results() noexcept;
  const AeChannelState* state() const noexcept { return h_state_.host<AeChannelState>(); }

  // New thresholds and times from the next enqueue() on, as AeHitDetector::set_params (the lanes'
  // thresholds follow the same rule): a reload. Synchronous (the state's thresholds go up again);
  // allocates nothing. Throws CudaError.
  void set_params(const AeSampleParams& p);

  void reset();  // synchronous; allocates nothing. Throws CudaError.
  uint64_t dropped() const noexcept { return dropped_; }
  // Whether a call of `frames` samples with the current parameters runs segmented.
  bool segmented(uint32_t frames) const noexcept;
  // Segments of the calls collected so far that the join settled in closed form (nothing above
  // threshold), took as run from idle, and ran again (cuda/ae_hits_segmented.cu).
  struct SegmentCounts {
    uint64_t closed_form = 0, taken = 0, run_again = 0;
  };
  SegmentCounts segment_counts() const noexcept { return {segments_[0], segments_[1], segments_[2]}; }

 private:
  AeSampleParams params_;
  uint32_t lanes_, capacity_;
  bool poison_;
  AeChannelState* d_state_ = nullptr;
  AeHit* d_hits_ = nullptr;
  AeLevel* d_levels_ = nullptr;
  unsigned int* d_counts_ = nullptr;
  void* d_seg_meta_ = nullptr;  // segmented-kernel scratch (cuda/ae_hits.cuh AeSegScratch)
  AeHit* d_seg_hits_ = nullptr;
  AeLevel* d_seg_levels_ = nullptr;
  uint32_t seg_capacity_ = 0;
  static constexpr int kCounts = 5;  // hits, levels, then the three segment counts
  uint64_t dropped_ = 0;
  uint64_t segments_[3] = {0, 0, 0};
  bool host_results_ = false;
  PinnedBuffer h_hits_, h_levels_, h_counts_, h_state_;  // host_results (hits and levels mapped)
  std::vector<AeChannelState> scratch_;  // lanes: reset() and set_params() allocate nothing
};

}  // namespace vigil::cuda
