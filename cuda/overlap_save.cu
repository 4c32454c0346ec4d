// Element-wise kernels around the batched cuFFT calls; each is a grid-stride loop over a flat
// index so reads and writes coalesce along the fastest-varying dimension.
#include "cuda/overlap_save.cuh"
#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;



__global__ void append_kernel(const float* __restrict__ in, size_t in_stride, uint32_t frames, uint32_t channels,
                              float* __restrict__ line, size_t line_len, size_t at) {
  const size_t total = size_t(frames) * channels;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t c = g / frames, i = g % frames;
    line[c * line_len + at + i] = in[c * in_stride + i];
  }
}

__device__ inline float virtual_at(const float* line, size_t line_len, size_t split, const float* in, size_t in_stride,
                                   size_t c, size_t v) {
  return v < split ? line[c * line_len + v] : in[c * in_stride + (v - split)];
}

__global__ void gather_kernel(const float* __restrict__ line, size_t line_len, size_t split, const float* __restrict__ in,
                              size_t in_stride, uint32_t channels, uint32_t blocks, uint32_t hop, uint32_t n,
                              float* __restrict__ frames) {
  const size_t total = size_t(blocks) * channels * n;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t t = g % n, s = g / n, c = s % channels, j = s / channels;
    frames[g] = virtual_at(line, line_len, split, in, in_stride, c, j * hop + t);
  }
}

__global__ void multiply_kernel(const float2* __restrict__ spec, const float2* __restrict__ taps, uint32_t bands,
                                uint32_t spectra, uint32_t capacity, uint32_t bins, float2* __restrict__ out) {
  const size_t per_band = size_t(spectra) * bins, total = per_band * bands;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t b = g / per_band, r = g % per_band, k = r % bins;
    const float2 x = spec[r], h = taps[b * bins + k];
    out[b * size_t(capacity) * bins + r] = make_float2(x.x * h.x - x.y * h.y, x.x * h.y + x.y * h.x);
  }
}

__global__ void scatter_kernel(const float* __restrict__ time, uint32_t bands, uint32_t channels, uint32_t blocks,
                               uint32_t block_capacity, uint32_t hop, uint32_t n, uint32_t skip,
                               float* __restrict__ ring, size_t ring_len, size_t start, uint64_t base_rel,
                               uint32_t frames, float* __restrict__ out, size_t out_stride) {
  const size_t total = size_t(bands) * blocks * channels * hop;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t i = g % hop, s = g / hop;  // s = (b * blocks + j) * channels + c
    const size_t c = s % channels, bj = s / channels, j = bj % blocks, b = bj / blocks;
    const size_t src = (b * block_capacity + j) * channels + c;
    const size_t lane = b * channels + c;
    const float v = time[src * n + skip + i];
    const uint64_t rel = base_rel + j * hop + i;
    if (rel < frames)
      out[lane * out_stride + rel] = v;
    else
      ring[lane * ring_len + (start + j * hop + i) % ring_len] = v;
  }
}

__global__ void emit_kernel(const float* __restrict__ ring, uint32_t lanes, size_t ring_len, size_t start,
                            uint32_t frames, float* __restrict__ out, size_t out_stride) {
  const size_t total = size_t(lanes) * frames;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t lane = g / frames, i = g % frames;
    out[lane * out_stride + i] = ring[lane * ring_len + (start + i) % ring_len];
  }
}

__global__ void shift_kernel(const float* __restrict__ src, size_t split, const float* __restrict__ in,
                             size_t in_stride, float* __restrict__ dst, size_t line_len, uint32_t channels,
                             size_t from, size_t keep) {
  const size_t total = size_t(channels) * keep;
  for (size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
    const size_t c = g / keep, i = g % keep;
    dst[c * line_len + i] = virtual_at(src, line_len, split, in, in_stride, c, from + i);
  }
}

}  // namespace

cudaError_t launch_os_append(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels, float* d_line,
                             size_t line_len, size_t at, cudaStream_t stream) noexcept {
  if (frames == 0) return cudaSuccess;
  append_kernel<<<grid_for(size_t(frames) * channels), kThreads, 0, stream>>>(d_in, in_stride, frames, channels, d_line,
                                                                               line_len, at);
  return after_launch(stream);
}

cudaError_t launch_os_gather(const float* d_line, size_t line_len, size_t split, const float* d_in, size_t in_stride,
                             uint32_t channels, uint32_t blocks, uint32_t hop, uint32_t n, float* d_frames,
                             cudaStream_t stream) noexcept {
  if (blocks == 0) return cudaSuccess;
  gather_kernel<<<grid_for(size_t(blocks) * channels * n), kThreads, 0, stream>>>(d_line, line_len, split, d_in,
                                                                                  in_stride, channels, blocks, hop, n,
                                                                                  d_frames);
  return after_launch(stream);
}

cudaError_t launch_os_multiply(const float2* d_spec, const float2* d_taps, uint32_t bands, uint32_t spectra,
                               uint32_t capacity, uint32_t bins, float2* d_out, cudaStream_t stream) noexcept {
  if (spectra == 0) return cudaSuccess;
  if (spectra > capacity) return cudaErrorInvalidValue;
  multiply_kernel<<<grid_for(size_t(bands) * spectra * bins), kThreads, 0, stream>>>(d_spec, d_taps, bands, spectra,
                                                                                     capacity, bins, d_out);
  return after_launch(stream);
}

cudaError_t launch_os_scatter(const float* d_time, uint32_t bands, uint32_t channels, uint32_t blocks,
                              uint32_t block_capacity, uint32_t hop, uint32_t n, uint32_t skip, float* d_ring,
                              size_t ring_len, size_t start, uint64_t base_rel, uint32_t frames, float* d_out,
                              size_t out_stride, cudaStream_t stream) noexcept {
  if (blocks == 0) return cudaSuccess;
  if (blocks > block_capacity || skip + hop > n) return cudaErrorInvalidValue;
  scatter_kernel<<<grid_for(size_t(bands) * blocks * channels * hop), kThreads, 0, stream>>>(
      d_time, bands, channels, blocks, block_capacity, hop, n, skip, d_ring, ring_len, start, base_rel, frames, d_out,
      out_stride);
  return after_launch(stream);
}

cudaError_t launch_os_emit(const float* d_ring, uint32_t lanes, size_t ring_len, size_t start, uint32_t frames,
                           float* d_out, size_t out_stride, cudaStream_t stream) noexcept {
  if (frames == 0) return cudaSuccess;
  emit_kernel<<<grid_for(size_t(lanes) * frames), kThreads, 0, stream>>>(d_ring, lanes, ring_len, start, frames, d_out,
                                                                          out_stride);
  return after_launch(stream);
}

cudaError_t launch_os_shift(const float* d_src, size_t split, const float* d_in, size_t in_stride, float* d_dst,
                            size_t line_len, uint32_t channels, size_t from, size_t keep, cudaStream_t stream) noexcept {
  if (keep == 0) return cudaSuccess;
  if (d_src == d_dst) return cudaErrorInvalidValue;  // two buffers, never in place
  shift_kernel<<<grid_for(size_t(channels) * keep), kThreads, 0, stream>>>(d_src, split, d_in, in_stride, d_dst,
                                                                           line_len, channels, from, keep);
  return after_launch(stream);
}

}  // namespace vigil::cuda
