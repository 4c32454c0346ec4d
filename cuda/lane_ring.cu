#include "cuda/lane_ring.cuh"

#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

// x: frames within a lane (grid-stride), y: lanes (grid-stride). Each thread writes one float:
// consecutive threads, consecutive ring positions (one wrap at most per lane).
__global__ void lanes_to_ring(const float* __restrict__ src, size_t src_stride, uint32_t first, uint32_t frames,
                              uint32_t lanes, float* __restrict__ ring, uint32_t ring_frames,
                              const uint32_t* __restrict__ position) {
  const uint32_t pos = *position;
  for (uint32_t l = blockIdx.y; l < lanes; l += gridDim.y) {
    const float* in = src + size_t(l) * src_stride + first;
    float* out = ring + size_t(l) * ring_frames;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < frames; i += gridDim.x * blockDim.x) {
      uint32_t at = pos + i;
      if (at >= ring_frames) at -= ring_frames;
      out[at] = in[i];
    }
  }
}

}  // namespace

cudaError_t launch_lanes_to_ring(const LanesToRingParams& p, cudaStream_t stream) {
  if (!p.d_src || !p.ring || !p.position || p.frames == 0 || p.frames > p.ring_frames || p.lanes == 0 ||
      p.lanes > (1u << 24) || p.src_stride < size_t(p.first) + p.frames)
    return cudaErrorInvalidValue;
  constexpr unsigned kThreads = 256;
  const unsigned x = (p.frames + kThreads - 1) / kThreads;
  const dim3 grid(x < 64 ? x : 64, p.lanes < 65535 ? p.lanes : 65535);
  lanes_to_ring<<<grid, kThreads, 0, stream>>>(p.d_src, p.src_stride, p.first, p.frames, p.lanes, p.ring,
                                               p.ring_frames, p.position);
  return after_launch(stream);
}

}  // namespace vigil::cuda
