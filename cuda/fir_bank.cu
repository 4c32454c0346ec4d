// Kernels of the CUDA partitioned FIR bank. The accumulate kernel is memory-bound: each thread
// owns one frequency bin of one (band, channel) lane and walks the P partitions, so reads of the
// delay line and the tap spectra are coalesced across the warp.
#include "cuda/fir_bank.cuh"
#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void stage_input_kernel(const float* __restrict__ in, size_t in_stride, uint32_t frames, uint32_t block,
                                   uint32_t fill, float* __restrict__ time, uint32_t* __restrict__ blocks_started) {
  const uint32_t c = blockIdx.y;
  // A new block starts: count it (no thread of this kernel reads the count; accumulate does).
  if (fill == 0 && blockIdx.x == 0 && c == 0 && threadIdx.x == 0) ++*blocks_started;
  float* t = time + size_t(c) * 2 * block;
  const float* x = in + size_t(c) * in_stride;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < block; i += gridDim.x * blockDim.x) {
    // The same thread slides index i and may then overwrite it: no race.
    if (fill == 0) t[i] = t[block + i];
    if (i >= fill && i < fill + frames) t[block + i] = x[i - fill];
  }
}

__global__ void accumulate_kernel(float2* __restrict__ fdl, const float2* __restrict__ fresh,
                                  const float2* __restrict__ taps, const uint32_t* __restrict__ parts,
                                  const uint32_t* __restrict__ blocks_started, uint32_t channels, uint32_t partitions,
                                  uint32_t bins, float2* __restrict__ acc) {
  const uint32_t lane = blockIdx.y;  // b * channels + c
  const uint32_t b = lane / channels, c = lane % channels;
  const uint32_t used = parts[b];
  // The ring position lives on the device, so the same launches (a CUDA graph) serve every block.
  const uint32_t pos = *blocks_started % partitions;
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < bins; k += gridDim.x * blockDim.x) {
    // The newest spectrum comes from `fresh`; band 0's threads also file it in the ring at pos,
    // a slot no thread reads in this launch (older partitions only: p >= 1).
    const float2 newest = fresh[size_t(c) * bins + k];
    if (b == 0) fdl[(size_t(c) * partitions + pos) * bins + k] = newest;
    float re = 0.0f, im = 0.0f;
    for (uint32_t p = 0; p < used; ++p) {
      const uint32_t slot = (pos + partitions - p) % partitions;
      const float2 x = p == 0 ? newest : fdl[(size_t(c) * partitions + slot) * bins + k];
      const float2 h = taps[(size_t(b) * partitions + p) * bins + k];
      re += x.x * h.x - x.y * h.y;
      im += x.x * h.y + x.y * h.x;
    }
    acc[size_t(lane) * bins + k] = make_float2(re, im);
  }
}

__global__ void copy_output_kernel(const float* __restrict__ full, uint32_t block, uint32_t fill, uint32_t frames,
                                   float* __restrict__ out, size_t out_stride) {
  const uint32_t lane = blockIdx.y;
  const float* src = full + size_t(lane) * 2 * block + block + fill;
  float* dst = out + size_t(lane) * out_stride;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < frames; i += gridDim.x * blockDim.x) dst[i] = src[i];
}

// The batched chunk (one partition, k whole blocks from a block boundary): window j of channel c
// is [block j - 1 | block j] of the chunk, block -1 being the current block kept in `time`.
__global__ void batch_windows_kernel(const float* __restrict__ in, size_t in_stride, const float* __restrict__ time,
                                     uint32_t block, uint32_t k, float* __restrict__ win) {
  const uint32_t c = blockIdx.y, n = 2 * block;
  const float* x = in + size_t(c) * in_stride;
  const float* t = time + size_t(c) * n;
  float* w = win + size_t(c) * k * n;
  for (uint32_t at = blockIdx.x * blockDim.x + threadIdx.x; at < k * n; at += gridDim.x * blockDim.x) {
    const long src = long(at / n) * block + long(at % n) - long(block);  // in chunk frames
    w[at] = src < 0 ? t[n + src] : x[src];
  }
}

// acc[b][c][j] = fresh[c][j] * taps[b] (one partition).
__global__ void batch_multiply_kernel(const float2* __restrict__ fresh, const float2* __restrict__ taps,
                                      uint32_t channels, uint32_t k, uint32_t bins, float2* __restrict__ acc) {
  const uint32_t lane = blockIdx.y, b = lane / channels, c = lane % channels;
  const float2* x = fresh + size_t(c) * k * bins;
  const float2* h = taps + size_t(b) * bins;
  float2* y = acc + size_t(lane) * k * bins;
  for (uint32_t at = blockIdx.x * blockDim.x + threadIdx.x; at < k * bins; at += gridDim.x * blockDim.x) {
    const float2 v = x[at], g = h[at % bins];
    y[at] = make_float2(v.x * g.x - v.y * g.y, v.x * g.y + v.y * g.x);
  }
}

// The chunk's output, one block late as block by block: block j is window j - 1's result, block 0
// the previous chunk's last (kept in `full`).
__global__ void batch_output_kernel(const float* __restrict__ full, const float* __restrict__ wout, uint32_t block,
                                    uint32_t k, float* __restrict__ out, size_t out_stride) {
  const uint32_t lane = blockIdx.y, n = 2 * block;
  for (uint32_t at = blockIdx.x * blockDim.x + threadIdx.x; at < k * block; at += gridDim.x * blockDim.x) {
    const uint32_t j = at / block, i = at % block;
    out[size_t(lane) * out_stride + at] =
        j == 0 ? full[size_t(lane) * n + block + i] : wout[(size_t(lane) * k + j - 1) * n + block + i];
  }
}

// The state block by block would have left: `full` the last window's result, `time` the chunk's
// last two blocks, k more blocks begun.
__global__ void batch_carry_kernel(const float* __restrict__ in, size_t in_stride, const float* __restrict__ wout,
                                   uint32_t channels, uint32_t block, uint32_t k, float* __restrict__ time,
                                   float* __restrict__ full, uint32_t* __restrict__ blocks_started) {
  const uint32_t lane = blockIdx.y, n = 2 * block;
  if (lane == 0 && blockIdx.x == 0 && threadIdx.x == 0) *blocks_started += k;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    full[size_t(lane) * n + i] = wout[(size_t(lane) * k + k - 1) * n + i];
    if (lane < channels) time[size_t(lane) * n + i] = in[size_t(lane) * in_stride + size_t(k - 2) * block + i];
  }
}

unsigned blocks_for(uint32_t n) { return unsigned((n + kThreads - 1) / kThreads < 1 ? 1 : (n + kThreads - 1) / kThreads); }


}  // namespace

cudaError_t launch_fir_batch_windows(const float* d_in, size_t in_stride, const float* d_time, uint32_t channels,
                                     uint32_t block, uint32_t k, float* d_win, cudaStream_t stream) noexcept {
  if (channels == 0 || channels > 65535 || k < 2) return cudaErrorInvalidValue;
  batch_windows_kernel<<<dim3(grid_for(size_t(k) * 2 * block), channels), kThreads, 0, stream>>>(d_in, in_stride,
                                                                                              d_time, block, k, d_win);
  return after_launch(stream);
}

cudaError_t launch_fir_batch_multiply(const float2* d_fresh, const float2* d_taps, uint32_t bands, uint32_t channels,
                                      uint32_t k, uint32_t bins, float2* d_acc, cudaStream_t stream) noexcept {
  if (bands == 0 || channels == 0 || bands * channels > 65535) return cudaErrorInvalidValue;
  batch_multiply_kernel<<<dim3(grid_for(size_t(k) * bins), bands * channels), kThreads, 0, stream>>>(
      d_fresh, d_taps, channels, k, bins, d_acc);
  return after_launch(stream);
}

cudaError_t launch_fir_batch_output(const float* d_full, const float* d_wout, uint32_t lanes, uint32_t block,
                                    uint32_t k, float* d_out, size_t out_stride, cudaStream_t stream) noexcept {
  if (lanes == 0 || lanes > 65535) return cudaErrorInvalidValue;
  batch_output_kernel<<<dim3(grid_for(size_t(k) * block), lanes), kThreads, 0, stream>>>(d_full, d_wout, block, k,
                                                                                        d_out, out_stride);
  return after_launch(stream);
}

cudaError_t launch_fir_batch_carry(const float* d_in, size_t in_stride, const float* d_wout, uint32_t lanes,
                                   uint32_t channels, uint32_t block, uint32_t k, float* d_time, float* d_full,
                                   uint32_t* d_blocks_started, cudaStream_t stream) noexcept {
  if (lanes < channels || lanes > 65535 || k < 2) return cudaErrorInvalidValue;
  batch_carry_kernel<<<dim3(grid_for(2 * size_t(block)), lanes), kThreads, 0, stream>>>(
      d_in, in_stride, d_wout, channels, block, k, d_time, d_full, d_blocks_started);
  return after_launch(stream);
}

cudaError_t launch_fir_stage_input(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels,
                                   uint32_t block, uint32_t fill, float* d_time, uint32_t* d_blocks_started,
                                   cudaStream_t stream) noexcept {
  if (channels == 0 || block == 0 || fill + frames > block) return cudaErrorInvalidValue;
  stage_input_kernel<<<dim3(blocks_for(block), channels), kThreads, 0, stream>>>(d_in, in_stride, frames, block, fill,
                                                                                 d_time, d_blocks_started);
  return after_launch(stream);
}

cudaError_t launch_fir_accumulate(float2* d_fdl, const float2* d_fresh, const float2* d_taps, const uint32_t* d_parts,
                                  const uint32_t* d_blocks_started, uint32_t bands, uint32_t channels,
                                  uint32_t partitions, uint32_t bins, float2* d_acc, cudaStream_t stream) noexcept {
  if (bands == 0 || channels == 0 || partitions == 0) return cudaErrorInvalidValue;
  accumulate_kernel<<<dim3(blocks_for(bins), bands * channels), kThreads, 0, stream>>>(
      d_fdl, d_fresh, d_taps, d_parts, d_blocks_started, channels, partitions, bins, d_acc);
  return after_launch(stream);
}

cudaError_t launch_fir_copy_output(const float* d_full, uint32_t lanes, uint32_t block, uint32_t fill,
                                   uint32_t frames, float* d_out, size_t out_stride, cudaStream_t stream) noexcept {
  if (lanes == 0 || fill + frames > block) return cudaErrorInvalidValue;
  if (frames == 0) return cudaSuccess;
  copy_output_kernel<<<dim3(blocks_for(frames), lanes), kThreads, 0, stream>>>(d_full, block, fill, frames, d_out,
                                                                               out_stride);
  return after_launch(stream);
}

}  // namespace vigil::cuda
