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

__global__ void ae_zero_counts_kernel(unsigned int* counts, unsigned n) {
  if (threadIdx.x < n) counts[threadIdx.x] = 0;
}

static_assert(sizeof(AeChannelState) % sizeof(uint32_t) == 0 && alignof(AeChannelState) >= alignof(uint32_t),
              "the lanes' state is copied word by word");

__global__ void ae_publish_kernel(const unsigned int* counts, unsigned int* host_counts, unsigned n_counts,
                                  const uint32_t* state, uint32_t* host_state, size_t words) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n_counts) host_counts[i] = counts[i];
  for (size_t w = i; w < words; w += size_t(gridDim.x) * blockDim.x) host_state[w] = state[w];
}

}  // namespace

cudaError_t launch_ae_zero_counts(unsigned int* d_counts, unsigned n, cudaStream_t stream) {
  if (!d_counts || n == 0 || n > 32) return cudaErrorInvalidValue;
  ae_zero_counts_kernel<<<1, 32, 0, stream>>>(d_counts, n);
  return after_launch(stream);
}

cudaError_t launch_ae_publish(const unsigned int* d_counts, unsigned int* host_counts, unsigned n_counts,
                              const AeChannelState* d_state, AeChannelState* host_state, uint32_t lanes,
                              cudaStream_t stream) {
  if (!d_counts || !host_counts || !d_state || !host_state || n_counts > 256) return cudaErrorInvalidValue;
  const size_t words = size_t(lanes) * sizeof(AeChannelState) / sizeof(uint32_t);
  ae_publish_kernel<<<grid_for(words > n_counts ? words : n_counts), 256, 0, stream>>>(
      d_counts, host_counts, n_counts, reinterpret_cast<const uint32_t*>(d_state),
      reinterpret_cast<uint32_t*>(host_state), words);
  return after_launch(stream);
}

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
