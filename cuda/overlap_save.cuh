// Kernels of OverlapSaveCuda: single-block overlap-save with every block of a call batched
// through one cuFFT call. Device layout:
//   line   [channels][line_len]   history (M - 1 samples), then pending input, then this call's
//   frames [blocks][channels][N]  overlapping windows cut from line (N = FFT size)
//   spec   [blocks*channels][N/2+1] and [bands][blocks*channels][N/2+1] after the multiply
//   ring   [bands*channels][R]    filtered samples waiting to be emitted (R = ring length)
#pragma once

#include <cuda_runtime_api.h>
#include <vector_types.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

// line[c][at + i] = in[c * in_stride + i] for i < frames.
cudaError_t launch_os_append(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels, float* d_line,
                             size_t line_len, size_t at, cudaStream_t stream) noexcept;
// The virtual line of channel c is line[c][0 .. split) followed by in[c * in_stride ...]: the
// history and pending samples kept on the device, then this call's input, read in place.
// frames[(j * channels + c) * n + t] = virtual[c][j * hop + t] for j < blocks, t < n.
cudaError_t launch_os_gather(const float* d_line, size_t line_len, size_t split, const float* d_in, size_t in_stride,
                             uint32_t channels, uint32_t blocks, uint32_t hop, uint32_t n, float* d_frames,
                             cudaStream_t stream) noexcept;
// out[b * capacity + s][k] = spec[s][k] * taps[b][k] for s < spectra (<= capacity), k < bins.
cudaError_t launch_os_multiply(const float2* d_spec, const float2* d_taps, uint32_t bands, uint32_t spectra,
                               uint32_t capacity, uint32_t bins, float2* d_out, cudaStream_t stream) noexcept;
// Sample i of block j, lane (b, c): v = time[(b * block_capacity + j) * channels + c][skip + i].
// Its output position in this call is rel = base_rel + j * hop + i: when rel < frames it goes
// straight to out[lane * out_stride + rel], otherwise to ring[lane][(start + j * hop + i) % ring_len]
// for a later call.
cudaError_t launch_os_scatter(const float* d_time, uint32_t bands, uint32_t channels, uint32_t blocks,
                              uint32_t block_capacity, uint32_t hop, uint32_t n, uint32_t skip, float* d_ring,
                              size_t ring_len, size_t start, uint64_t base_rel, uint32_t frames, float* d_out,
                              size_t out_stride, cudaStream_t stream) noexcept;
// out[lane * out_stride + i] = ring[lane][(start + i) % ring_len] for i < frames.
cudaError_t launch_os_emit(const float* d_ring, uint32_t lanes, size_t ring_len, size_t start, uint32_t frames,
                           float* d_out, size_t out_stride, cudaStream_t stream) noexcept;
// dst[c][i] = virtual[c][from + i] for i < keep (virtual as for gather): the tail of this call's
// line becomes the head of the other line buffer (two buffers, so ranges never overlap).
cudaError_t launch_os_shift(const float* d_src, size_t split, const float* d_in, size_t in_stride, float* d_dst,
                            size_t line_len, uint32_t channels, size_t from, size_t keep, cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
