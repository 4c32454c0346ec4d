// The one-warp-per-lane kernel: each lane's chunk in order (ae_hits_step.cuh has the state
// machine). ae_hits_segmented.cu splits long chunks over many warps and uses this one otherwise.
#include "cuda/ae_hits.cuh"
#include "cuda/ae_hits_step.cuh"
#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

using namespace ae_device;

__global__ void ae_hits_kernel(AeHitsParams k) {
  const unsigned lane = threadIdx.x & 31u;
  const uint32_t channel = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (channel >= k.lanes) return;  // whole warps only
  const float* x = k.d_x + size_t(channel) * k.stride;
  AeChannelState s = k.d_state[channel];
  LaneSums ls;  // lane 0 carries the sums so far; the others start from 0
  if (lane == 0) {
    ls.noise = s.noise_sum;
    ls.level_sq = s.level_sq;
    ls.level_abs = s.level_abs;
  }
  if (k.p.floating_window) ls.window_pos = uint32_t(k.first_frame % k.p.floating_window);
  if (k.p.level_interval) ls.level_pos = uint32_t(k.first_frame % k.p.level_interval);
  const AeSink sink{k.d_hits, &k.d_counts[0], k.capacity, k.d_levels, &k.d_counts[1], k.capacity};
  ae_walk(k.p, sink, s, ls, x, 0, k.frames, k.first_frame, lane, channel, [](float, uint64_t, unsigned) {});
  s.noise_sum = warp_sum(ls.noise);
  s.level_sq = warp_sum(ls.level_sq);
  s.level_abs = warp_sum(ls.level_abs);
  if (lane == 0) k.d_state[channel] = s;
}

}  // namespace

cudaError_t launch_ae_hits(const AeHitsParams& k, cudaStream_t stream) {
  if (k.lanes == 0 || k.lanes > (1u << 16) || !k.d_x || !k.d_state || !k.d_hits || !k.d_levels || !k.d_counts ||
      k.stride < k.frames)
    return cudaErrorInvalidValue;
  if (k.frames == 0) return cudaSuccess;
  if (k.seg.d_meta && ae_segmented_fits(k.p, k.frames, k.lanes, k.seg.capacity)) return launch_ae_hits_segmented(k, stream);
  constexpr unsigned kThreads = 128;  // 4 lanes per block
  const unsigned blocks = (k.lanes * 32 + kThreads - 1) / kThreads;
  ae_hits_kernel<<<blocks, kThreads, 0, stream>>>(k);
  return after_launch(stream);
}

}  // namespace vigil::cuda
