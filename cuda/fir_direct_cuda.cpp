#include "cuda/fir_direct_cuda.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/convolve_direct.cuh"
#include "cuda/cuda_check.hpp"

namespace vigil::cuda {

static_assert(FirDirectCuda::kTiledMaxTaps == kConvolveMaxTaps, "the tiled kernel's shared memory bounds its taps");

namespace {

int multiprocessors() {
  int dev = 0, count = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 1;
  return std::max(count, 1);
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

FirDirectCuda::FirDirectCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, cudaStream_t stream,
                             uint32_t max_frames, uint32_t layout_channels)
    : bands_(uint32_t(band_taps.size())), channels_(channels), stream_(stream) {
  if (band_taps.empty() || band_taps.size() > 65535)
    throw std::invalid_argument("FirDirectCuda: bands must be 1..65535, got " + std::to_string(band_taps.size()));
  if (channels < 1 || channels > 65535)
    throw std::invalid_argument("FirDirectCuda: channels must be 1..65535, got " + std::to_string(channels));
  for (size_t b = 0; b < band_taps.size(); ++b) {
    if (band_taps[b].empty() || band_taps[b].size() > kMaxTaps)
      throw std::invalid_argument("FirDirectCuda: band " + std::to_string(b) + " taps must be 1.." +
                                  std::to_string(kMaxTaps) + ", got " + std::to_string(band_taps[b].size()));
    m_ = std::max(m_, uint32_t(band_taps[b].size()));
  }
  h_taps_.assign(size_t(bands_) * m_, 0.0f);
  const size_t hist = size_t(channels_) * (m_ - 1);
  // The tiled kernel runs a block per 2 304 outputs of a lane, each thread over every tap: fewer
  // blocks than two per SM leave the GPU mostly idle, and the split kernel cuts the taps too, into
  // segments sized for about one block per SM.
  // (Chosen for layout_channels: how the taps are cut sets the order of the sums.)
  const uint64_t lanes = uint64_t(bands_) * channels_, sms = uint64_t(multiprocessors());
  const uint64_t layout_lanes = uint64_t(bands_) * (layout_channels ? layout_channels : channels_);
  const uint64_t frames = max_frames ? max_frames : 65536;
  split_ = m_ > kTiledMaxTaps ||
           (max_frames && ceil_div(frames, kConvolveThreads * kConvolvePerThread) * layout_lanes < 2 * sms);
  if (split_) {
    const uint64_t tiles = ceil_div(frames, kSplitTile);
    seg_ = uint32_t(std::clamp<uint64_t>(m_ * tiles * layout_lanes / sms / 64 * 64, 64, 1024));
    seg_ = std::min<uint32_t>(seg_, uint32_t(ceil_div(m_, 64) * 64));
    segments_ = uint32_t(ceil_div(m_, seg_));
    constexpr uint64_t kPartialFloats = uint64_t(8) << 20;  // 32 MiB of segment sums at most
    tiles_cap_ = uint32_t(std::clamp<uint64_t>(kPartialFloats / (lanes * segments_ * kSplitTile), 1, tiles));
  }
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_taps_), h_taps_.size() * sizeof(float)));
    for (float** h : {&d_hist_, &d_next_})
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(h), std::max<size_t>(hist, 1) * sizeof(float)));
    if (split_) {
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_partial_),
                                  lanes * tiles_cap_ * segments_ * kSplitTile * sizeof(float)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_counters_), (lanes * tiles_cap_ + 1) * sizeof(unsigned)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_parity_), sizeof(int)));
    }
    VIGIL_CUDA_CHECK(set_taps(band_taps));
    reset();
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  } catch (...) {
    free_device();
    throw;
  }
}

FirDirectCuda::~FirDirectCuda() { free_device(); }

void FirDirectCuda::free_device() noexcept {
  for (void* p : {static_cast<void*>(d_taps_), static_cast<void*>(d_hist_), static_cast<void*>(d_next_),
                  static_cast<void*>(d_partial_), static_cast<void*>(d_counters_), static_cast<void*>(d_parity_)})
    cudaFree(p);
}

void FirDirectCuda::reset() {
  const size_t hist = size_t(channels_) * (m_ - 1);
  if (hist) VIGIL_CUDA_CHECK(cudaMemsetAsync(d_hist_, 0, hist * sizeof(float), stream_));
  if (!split_) return;
  // Both history buffers (either may be current) and the counters a failed launch may have left.
  if (hist) VIGIL_CUDA_CHECK(cudaMemsetAsync(d_next_, 0, hist * sizeof(float), stream_));
  const size_t counters = size_t(bands_) * channels_ * tiles_cap_ + 1;
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_counters_, 0, counters * sizeof(unsigned), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_parity_, 0, sizeof(int), stream_));
}

cudaError_t FirDirectCuda::set_taps(const std::vector<std::vector<float>>& band_taps) noexcept {
  if (band_taps.size() != bands_) return cudaErrorInvalidValue;
  for (const auto& t : band_taps)
    if (t.empty() || t.size() > m_) return cudaErrorInvalidValue;
  std::fill(h_taps_.begin(), h_taps_.end(), 0.0f);
  for (uint32_t b = 0; b < bands_; ++b) std::copy(band_taps[b].begin(), band_taps[b].end(), h_taps_.begin() + size_t(b) * m_);
  // From pageable memory: the copy returns once the taps are staged (a reload, not the real-time path).
  return cudaMemcpyAsync(d_taps_, h_taps_.data(), h_taps_.size() * sizeof(float), cudaMemcpyHostToDevice, stream_);
}

cudaError_t FirDirectCuda::process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out,
                                   size_t out_stride) noexcept {
  if (frames == 0) return cudaSuccess;
  if (split_) {
    FirSplitArgs a;
    a.x = d_in;
    a.in_stride = in_stride;
    a.frames = frames;
    a.hist0 = d_hist_;
    a.hist1 = d_next_;
    a.parity = d_parity_;
    a.taps = d_taps_;
    a.m = int(m_);
    a.seg = int(seg_);
    a.segments = int(segments_);
    a.y = d_out;
    a.out_stride = out_stride;
    a.channels = channels_;
    a.partial = d_partial_;
    a.counters = d_counters_;
    // As many tiles a launch as the segment sums' buffer holds (one launch for the chunks it was sized for).
    const uint32_t per_launch = tiles_cap_ * kSplitTile;
    for (uint32_t first = 0; first < frames; first += per_launch) {
      a.first = first;
      a.count = std::min(per_launch, frames - first);
      a.tiles = int(ceil_div(uint64_t(a.count), kSplitTile));
      a.carry = first + a.count == frames;
      VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_direct_split(a, bands_, stream_));
    }
    return cudaSuccess;
  }
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_direct_bank(d_in, in_stride, frames, channels_, d_hist_, d_taps_, m_, bands_,
                                                    d_out, out_stride, stream_));
  if (m_ == 1) return cudaSuccess;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_direct_carry(d_in, in_stride, frames, channels_, d_hist_, m_, d_next_, stream_));
  return cudaMemcpyAsync(d_hist_, d_next_, size_t(channels_) * (m_ - 1) * sizeof(float), cudaMemcpyDeviceToDevice,
                         stream_);
}

}  // namespace vigil::cuda
