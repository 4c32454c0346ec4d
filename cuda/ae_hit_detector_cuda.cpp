#include "cuda/ae_hit_detector_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/ae_hits.cuh"
#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

AeHitDetectorCuda::AeHitDetectorCuda(const AeSampleParams& params, uint32_t lanes, uint32_t capacity, bool poison,
                                     bool host_results, uint32_t max_frames)
    : params_(params), lanes_(lanes), capacity_(capacity), poison_(poison), host_results_(host_results),
      scratch_(lanes) {
  seg_capacity_ = ae_seg_capacity(max_frames, lanes);
  if (lanes < 1 || lanes > (1u << 16))
    throw std::invalid_argument("AeHitDetectorCuda: lanes must be 1..65536, got " + std::to_string(lanes));
  if (capacity < 1) throw std::invalid_argument("AeHitDetectorCuda: capacity must be at least 1");
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_state_), lanes * sizeof(AeChannelState)));
    if (host_results) {
      h_hits_ = PinnedBuffer(capacity * sizeof(AeHit), true);
      h_levels_ = PinnedBuffer(capacity * sizeof(AeLevel), true);
      h_counts_ = PinnedBuffer(kCounts * sizeof(unsigned int), true);  // mapped: launch_ae_publish
      h_state_ = PinnedBuffer(lanes * sizeof(AeChannelState), true);
    } else {
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_hits_), capacity * sizeof(AeHit)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_levels_), capacity * sizeof(AeLevel)));
    }
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_counts_), kCounts * sizeof(unsigned int)));
    if (seg_capacity_) {
      const size_t segs = seg_capacity_;
      VIGIL_CUDA_CHECK(cudaMalloc(&d_seg_meta_, segs * sizeof(AeSegMeta)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_seg_hits_), segs * kAeSegHits * sizeof(AeHit)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_seg_levels_), segs * kAeSegLevels * sizeof(AeLevel)));
    }
    reset();
  } catch (...) {
    cudaFree(d_state_);
    if (!host_results) {
      cudaFree(d_hits_);
      cudaFree(d_levels_);
    }
    cudaFree(d_counts_);
    cudaFree(d_seg_meta_);
    cudaFree(d_seg_hits_);
    cudaFree(d_seg_levels_);
    throw;
  }
  if (host_results) {  // the kernel writes through the device aliases of the mapped buffers
    d_hits_ = h_hits_.device<AeHit>();
    d_levels_ = h_levels_.device<AeLevel>();
  }
}

AeHitDetectorCuda::~AeHitDetectorCuda() {
  cudaFree(d_state_);
  if (!host_results_) {
    cudaFree(d_hits_);
    cudaFree(d_levels_);
  }
  cudaFree(d_counts_);
  cudaFree(d_seg_meta_);
  cudaFree(d_seg_hits_);
  cudaFree(d_seg_levels_);
}

bool AeHitDetectorCuda::segmented(uint32_t frames) const noexcept {
  return seg_capacity_ && ae_segmented_fits(params_, frames, lanes_, seg_capacity_);
}

void AeHitDetectorCuda::reset() {
  AeChannelState s0;
  s0.threshold = params_.threshold;
  std::vector<AeChannelState>& init = scratch_;
  std::fill(init.begin(), init.end(), s0);
  VIGIL_CUDA_CHECK(cudaMemcpy(d_state_, init.data(), lanes_ * sizeof(AeChannelState), cudaMemcpyHostToDevice));
  if (host_results_) {
    std::copy(init.begin(), init.end(), h_state_.host<AeChannelState>());
    std::fill_n(h_counts_.host<unsigned int>(), kCounts, 0u);
  }
  dropped_ = 0;
}

void AeHitDetectorCuda::set_params(const AeSampleParams& p) {
  // The thresholds the lanes carry change as AeHitDetector::set_params changes them: through the
  // host copy of the state (the one after the last call, which host_results keeps; else fetched).
  std::vector<AeChannelState>& s = scratch_;
  if (host_results_)
    std::copy_n(h_state_.host<AeChannelState>(), lanes_, s.data());
  else
    VIGIL_CUDA_CHECK(cudaMemcpy(s.data(), d_state_, lanes_ * sizeof(AeChannelState), cudaMemcpyDeviceToHost));
  params_ = p;
  for (AeChannelState& c : s) c.threshold = p.floating_window ? std::max(c.threshold, p.threshold) : p.threshold;
  VIGIL_CUDA_CHECK(cudaMemcpy(d_state_, s.data(), lanes_ * sizeof(AeChannelState), cudaMemcpyHostToDevice));
  if (host_results_) std::copy(s.begin(), s.end(), h_state_.host<AeChannelState>());
}

AeHitDetectorCuda::Results AeHitDetectorCuda::results() noexcept {
  Results r;
  if (!host_results_) return r;
  const unsigned* counts = h_counts_.host<unsigned int>();
  r.hits = h_hits_.host<AeHit>();
  r.levels = h_levels_.host<AeLevel>();
  r.hits_n = std::min(counts[0], capacity_);
  r.levels_n = std::min(counts[1], capacity_);
  dropped_ += (counts[0] - r.hits_n) + (counts[1] - r.levels_n);
  for (int i = 0; i < 3; ++i) segments_[i] += counts[2 + i];
  return r;
}

cudaError_t AeHitDetectorCuda::enqueue(const float* d_x, size_t stride, uint32_t frames, uint64_t first_frame,
                                       cudaStream_t stream) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(launch_ae_zero_counts(d_counts_, kCounts, stream));
  if (poison_) {
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_hits_, 0xFF, capacity_ * sizeof(AeHit), stream));
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_levels_, 0xFF, capacity_ * sizeof(AeLevel), stream));
  }
  AeHitsParams k;
  k.p = params_;
  k.d_x = d_x;
  k.stride = stride;
  k.frames = frames;
  k.lanes = lanes_;
  k.first_frame = first_frame;
  k.d_state = d_state_;
  k.d_hits = d_hits_;
  k.d_levels = d_levels_;
  k.capacity = capacity_;
  k.d_counts = d_counts_;
  if (seg_capacity_) k.seg = AeSegScratch{static_cast<AeSegMeta*>(d_seg_meta_), d_seg_hits_, d_seg_levels_, seg_capacity_};
  VIGIL_CUDA_RETURN_IF_ERROR(launch_ae_hits(k, stream));
  if (host_results_)
    VIGIL_CUDA_RETURN_IF_ERROR(launch_ae_publish(d_counts_, h_counts_.device<unsigned int>(), kCounts, d_state_,
                                                 h_state_.device<AeChannelState>(), lanes_, stream));
  return cudaSuccess;
}

void AeHitDetectorCuda::collect(std::vector<AeHit>& hits, std::vector<AeLevel>& levels, cudaStream_t stream) {
  unsigned int counts[kCounts] = {};
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(counts, d_counts_, sizeof(counts), cudaMemcpyDeviceToHost, stream));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  const unsigned nh = std::min(counts[0], capacity_), nl = std::min(counts[1], capacity_);
  dropped_ += (counts[0] - nh) + (counts[1] - nl);
  for (int i = 0; i < 3; ++i) segments_[i] += counts[2 + i];
  const size_t h0 = hits.size(), l0 = levels.size();
  hits.resize(h0 + nh);
  levels.resize(l0 + nl);
  if (nh) VIGIL_CUDA_CHECK(cudaMemcpyAsync(hits.data() + h0, d_hits_, nh * sizeof(AeHit), cudaMemcpyDeviceToHost, stream));
  if (nl)
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(levels.data() + l0, d_levels_, nl * sizeof(AeLevel), cudaMemcpyDeviceToHost, stream));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Warps finish in any order: restore the CPU's order (per lane, by time).
  std::sort(hits.begin() + long(h0), hits.end(), [](const AeHit& a, const AeHit& b) {
    return a.channel != b.channel ? a.channel < b.channel : a.arrival_frame < b.arrival_frame;
  });
  std::sort(levels.begin() + long(l0), levels.end(), [](const AeLevel& a, const AeLevel& b) {
    return a.channel != b.channel ? a.channel < b.channel : a.end_frame < b.end_frame;
  });
}

}  // namespace vigil::cuda
