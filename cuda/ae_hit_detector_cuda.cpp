#include "cuda/ae_hit_detector_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/ae_hits.cuh"
#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

AeHitDetectorCuda::AeHitDetectorCuda(const AeSampleParams& params, uint32_t lanes, uint32_t capacity, bool poison)
    : params_(params), lanes_(lanes), capacity_(capacity), poison_(poison) {
  if (lanes < 1 || lanes > (1u << 16))
    throw std::invalid_argument("AeHitDetectorCuda: lanes must be 1..65536, got " + std::to_string(lanes));
  if (capacity < 1) throw std::invalid_argument("AeHitDetectorCuda: capacity must be at least 1");
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_state_), lanes * sizeof(AeChannelState)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_hits_), capacity * sizeof(AeHit)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_levels_), capacity * sizeof(AeLevel)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_counts_), 2 * sizeof(unsigned int)));
    reset();
  } catch (...) {
    cudaFree(d_state_);
    cudaFree(d_hits_);
    cudaFree(d_levels_);
    cudaFree(d_counts_);
    throw;
  }
}

AeHitDetectorCuda::~AeHitDetectorCuda() {
  cudaFree(d_state_);
  cudaFree(d_hits_);
  cudaFree(d_levels_);
  cudaFree(d_counts_);
}

void AeHitDetectorCuda::reset() {
  AeChannelState s0;
  s0.threshold = params_.threshold;
  const std::vector<AeChannelState> init(lanes_, s0);
  VIGIL_CUDA_CHECK(cudaMemcpy(d_state_, init.data(), lanes_ * sizeof(AeChannelState), cudaMemcpyHostToDevice));
  dropped_ = 0;
}

cudaError_t AeHitDetectorCuda::enqueue(const float* d_x, size_t stride, uint32_t frames, uint64_t first_frame,
                                       cudaStream_t stream) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_counts_, 0, 2 * sizeof(unsigned int), stream));
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
  return launch_ae_hits(k, stream);
}

void AeHitDetectorCuda::collect(std::vector<AeHit>& hits, std::vector<AeLevel>& levels, cudaStream_t stream) {
  unsigned int counts[2] = {0, 0};
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(counts, d_counts_, sizeof(counts), cudaMemcpyDeviceToHost, stream));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  const unsigned nh = std::min(counts[0], capacity_), nl = std::min(counts[1], capacity_);
  dropped_ += (counts[0] - nh) + (counts[1] - nl);
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
