// Element-wise kernels around the batched cuFFT calls; reads and writes coalesce along the
// fastest-varying dimension (a grid-stride loop over a flat index, or over a row).
#include "cuda/overlap_save.cuh"

#include <algorithm>

#include "cuda/launch_check.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// The gather, multiply and scatter kernels' elements a thread (below).
constexpr uint32_t kUnroll = 4;

// One x-block per row, and y-blocks enough for a row of `len` elements at kUnroll a thread
// (rows >= 1). False where the rows do not fit a grid's x (2^31 - 1: more than any chunk holds).
bool rows_grid(size_t rows, size_t len, dim3& grid) noexcept {
  if (rows > 0x7fffffffu) return false;
  const size_t per_block = size_t(kThreads) * kUnroll;
  grid = dim3(unsigned(rows), unsigned(std::min<size_t>(std::max<size_t>((len + per_block - 1) / per_block, 1), 65535)));
  return true;
}

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

// The gather, multiply and scatter kernels run on a grid of rows: blockIdx.x a row (a block of a
// channel, a spectrum of a band), blockIdx.y and the threads the elements along it, kUnroll a
// thread, loaded before any is stored (coalesced: the k-th of a thread's elements is blockDim.x
// after its (k-1)-th). A flat index split into its coordinates with 64-bit divisions for every
// element kept the SMs busy with integer work (ncu on an H100, 1 024 taps: gather and scatter at
// 77-79 % SM throughput and 28-36 % of DRAM bandwidth, half the call's time); a row's coordinates
// are now found once per thread.
__global__ void gather_kernel(const float* __restrict__ line, size_t line_len, size_t split, const float* __restrict__ in,
                              size_t in_stride, uint32_t channels, uint32_t hop, uint32_t n,
                              float* __restrict__ frames) {
  const uint32_t row = blockIdx.x, c = row % channels, j = row / channels;  // row = j * channels + c
  float* __restrict__ out = frames + size_t(row) * n;
  const size_t v0 = size_t(j) * hop;
  const float* line_row = line + size_t(c) * line_len + v0;         // window element t: line_row[t] before split
  const float* in_row = in + size_t(c) * in_stride + ((long long)v0 - (long long)split);  // and in_row[t] from it on
  const long long first_in = (long long)split - (long long)v0;      // the window's first t from `in`
  const uint32_t step = blockDim.x, span = gridDim.y * step * kUnroll;
  for (uint32_t t0 = blockIdx.y * step * kUnroll + threadIdx.x; t0 < n; t0 += span) {
    float v[kUnroll];
#pragma unroll
    for (uint32_t k = 0; k < kUnroll; ++k) {
      const uint32_t t = t0 + k * step;
      v[k] = t < n ? ((long long)t < first_in ? line_row[t] : in_row[t]) : 0.0f;
    }
#pragma unroll
    for (uint32_t k = 0; k < kUnroll; ++k)
      if (t0 + k * step < n) out[t0 + k * step] = v[k];
  }
}

__global__ void multiply_kernel(const float2* __restrict__ spec, const float2* __restrict__ taps, uint32_t spectra,
                                uint32_t capacity, uint32_t bins, float2* __restrict__ out) {
  const uint32_t row = blockIdx.x, b = row / spectra, r = row % spectra;  // row = b * spectra + r
  const float2* x_row = spec + size_t(r) * bins;
  const float2* h_row = taps + size_t(b) * bins;
  float2* __restrict__ y_row = out + (size_t(b) * capacity + r) * bins;
  const uint32_t step = blockDim.x, span = gridDim.y * step * kUnroll;
  for (uint32_t k0 = blockIdx.y * step * kUnroll + threadIdx.x; k0 < bins; k0 += span) {
    float2 x[kUnroll], h[kUnroll];
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) {
      const uint32_t k = k0 + u * step;
      x[u] = k < bins ? x_row[k] : make_float2(0.0f, 0.0f);
      h[u] = k < bins ? h_row[k] : make_float2(0.0f, 0.0f);
    }
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u)
      if (k0 + u * step < bins)
        y_row[k0 + u * step] = make_float2(x[u].x * h[u].x - x[u].y * h[u].y, x[u].x * h[u].y + x[u].y * h[u].x);
  }
}

__global__ void scatter_kernel(const float* __restrict__ time, uint32_t channels, uint32_t blocks,
                               uint32_t block_capacity, uint32_t hop, uint32_t n, uint32_t skip,
                               float* __restrict__ ring, size_t ring_len, size_t start, uint64_t base_rel,
                               uint32_t frames, float* __restrict__ out, size_t out_stride) {
  const uint32_t row = blockIdx.x;  // row = (b * blocks + j) * channels + c
  const uint32_t c = row % channels, bj = row / channels, j = bj % blocks, b = bj / blocks;
  const size_t lane = size_t(b) * channels + c;
  const float* src = time + ((size_t(b) * block_capacity + j) * channels + c) * n + skip;
  const uint64_t rel0 = base_rel + uint64_t(j) * hop;
  // The row's first `direct` samples go to the output block, the rest to the ring (beyond the chunk).
  const uint32_t direct = rel0 >= frames ? 0u : frames - rel0 < hop ? uint32_t(frames - rel0) : hop;
  float* __restrict__ out_row = out + lane * out_stride + rel0;
  float* __restrict__ ring_lane = ring + lane * ring_len;
  const size_t ring_at = start + size_t(j) * hop;
  const uint32_t step = blockDim.x, span = gridDim.y * step * kUnroll;
  for (uint32_t i0 = blockIdx.y * step * kUnroll + threadIdx.x; i0 < hop; i0 += span) {
    float v[kUnroll];
#pragma unroll
    for (uint32_t k = 0; k < kUnroll; ++k) v[k] = i0 + k * step < hop ? src[i0 + k * step] : 0.0f;
#pragma unroll
    for (uint32_t k = 0; k < kUnroll; ++k) {
      const uint32_t i = i0 + k * step;
      if (i >= hop) continue;
      if (i < direct)
        out_row[i] = v[k];
      else
        ring_lane[(ring_at + i) % ring_len] = v[k];
    }
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
  if (blocks == 0 || channels == 0 || n == 0) return cudaSuccess;
  dim3 grid;
  if (!rows_grid(size_t(blocks) * channels, n, grid)) return cudaErrorInvalidValue;
  gather_kernel<<<grid, kThreads, 0, stream>>>(d_line, line_len, split, d_in, in_stride, channels, hop, n, d_frames);
  return after_launch(stream);
}

cudaError_t launch_os_multiply(const float2* d_spec, const float2* d_taps, uint32_t bands, uint32_t spectra,
                               uint32_t capacity, uint32_t bins, float2* d_out, cudaStream_t stream) noexcept {
  if (spectra == 0) return cudaSuccess;
  if (spectra > capacity) return cudaErrorInvalidValue;
  if (bands == 0 || bins == 0) return cudaSuccess;
  dim3 grid;
  if (!rows_grid(size_t(bands) * spectra, bins, grid)) return cudaErrorInvalidValue;
  multiply_kernel<<<grid, kThreads, 0, stream>>>(d_spec, d_taps, spectra, capacity, bins, d_out);
  return after_launch(stream);
}

cudaError_t launch_os_scatter(const float* d_time, uint32_t bands, uint32_t channels, uint32_t blocks,
                              uint32_t block_capacity, uint32_t hop, uint32_t n, uint32_t skip, float* d_ring,
                              size_t ring_len, size_t start, uint64_t base_rel, uint32_t frames, float* d_out,
                              size_t out_stride, cudaStream_t stream) noexcept {
  if (blocks == 0) return cudaSuccess;
  if (blocks > block_capacity || skip + hop > n) return cudaErrorInvalidValue;
  if (bands == 0 || channels == 0 || hop == 0) return cudaSuccess;
  dim3 grid;
  if (!rows_grid(size_t(bands) * blocks * channels, hop, grid)) return cudaErrorInvalidValue;
  scatter_kernel<<<grid, kThreads, 0, stream>>>(d_time, channels, blocks, block_capacity, hop, n, skip, d_ring,
                                                ring_len, start, base_rel, frames, d_out, out_stride);
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
