// Direct (time-domain) full convolution on the device, y[i] = sum_k h[k] x[i-k] for
// i in [0, n + m - 1): the short-filter form (FFT methods win for long filters).
//   launch_convolve_full_tiled: shared-memory tiles of the input and the taps, each thread
//     keeping kConvolvePerThread consecutive outputs in registers with a sliding window of
//     inputs, so one shared load feeds kConvolvePerThread multiply-adds; taps read as broadcasts.
//     Inputs too small to fill the GPU that way also split the taps over 8 warps per block
//     (partial sums added in a fixed order: deterministic).
//   launch_convolve_full_naive: the 2010 paper's kernel, one output per thread reading x and h
//     from global memory: the comparison in bench/convolve_cuda_bench and a second reference.
// POD arguments only; device pointers. Host-callable launchers (enqueue only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

constexpr uint32_t kConvolveThreads = 256;
constexpr uint32_t kConvolvePerThread = 9;   // odd: the window loads hit distinct shared-memory banks
constexpr uint32_t kConvolveMaxTaps = 4096;  // shared memory: taps + a tile of 2304 + m - 1 inputs (< 48 KiB)

// n >= 1, 1 <= m <= kConvolveMaxTaps; y holds n + m - 1 floats.
cudaError_t launch_convolve_full_tiled(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept;
cudaError_t launch_convolve_full_naive(const float* d_x, size_t n, const float* d_h, uint32_t m, float* d_y,
                                       cudaStream_t stream) noexcept;

// The streaming FIR bank in direct form (cuda/fir_direct_cuda.hpp), with the same tiles and
// register blocking: lane (b, c) of d_out (at d_out + (b * channels + c) * out_stride) gets
// y[i] = sum_{k < m} h_b[k] x_c[i - k] for i < frames, where x_c[j] is d_in[c * in_stride + j] for
// j >= 0 and the channel's history d_hist[c * (m - 1) + m - 1 + j] before it (the previous calls'
// last m - 1 samples). d_taps: bands rows of m taps (shorter filters zero-padded at the end).
// 1 <= m <= kConvolveMaxTaps, frames >= 1, channels and bands 1..65535.
cudaError_t launch_fir_direct_bank(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels,
                                   const float* d_hist, const float* d_taps, uint32_t m, uint32_t bands, float* d_out,
                                   size_t out_stride, cudaStream_t stream) noexcept;
// The same bank for long filters or short chunks (cuda/fir_direct_cuda.hpp chooses): the taps cut
// into segments of `seg` (a multiple of 64), one block per tile of kSplitTile outputs, segment,
// channel and band, the segments' sums added in a fixed order (deterministic). Outputs
// [first, first + count) of the call's `frames`; inputs before frame 0 from the history, kept
// double-buffered on the device (hist0, hist1, *parity picking the one read). `carry` (a call's
// last launch) writes the new history (the last m - 1 samples of [history | frames]) into the
// other buffer and flips *parity. partial: bands x channels x tiles x segments x kSplitTile floats;
// counters: bands x channels x tiles + 1, zero (each launch leaves them zero).
constexpr uint32_t kSplitWarps = 8;
constexpr uint32_t kSplitTile = 32 * kConvolvePerThread;
struct FirSplitArgs {
  const float* x = nullptr;  // channel c at x + c * in_stride, frames samples
  size_t in_stride = 0;
  long long frames = 0, first = 0, count = 0;
  float* hist0 = nullptr;  // [channels][m - 1] each
  float* hist1 = nullptr;
  int* parity = nullptr;
  const float* taps = nullptr;  // [bands][m]
  int m = 0, seg = 0, segments = 0, tiles = 0;  // tiles: of this launch, ceil(count / kSplitTile) or more
  float* y = nullptr;                           // lane (b, c) at y + (b * channels + c) * out_stride
  size_t out_stride = 0;
  uint32_t channels = 0;
  float* partial = nullptr;
  unsigned* counters = nullptr;
  bool carry = false;
};
cudaError_t launch_fir_direct_split(const FirSplitArgs& args, uint32_t bands, cudaStream_t stream) noexcept;
// The history after such a call: d_next[c] = the last m - 1 samples of [d_hist[c] | the call's
// frames of channel c] (d_next and d_hist distinct). Nothing to do for m == 1.
cudaError_t launch_fir_direct_carry(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels,
                                    const float* d_hist, uint32_t m, float* d_next, cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
