// Kernels of StreamingDenoiserCuda: dsp/StreamingDenoiser's overlapped windows (N samples, hop
// N/2, sin² weights, overlap-added, output delayed by N) for many lanes and every window of a
// chunk at once. POD parameters and launchers only.
//
// Per lane, on the device: hist [N] the N samples before the chunk; ready [hop] the finished hop
// being emitted; pending [hop] the last window's weighted second half, waiting for the next
// window's first half. The chunk's line is hist followed by the chunk: window j (0-based, the
// windows that complete in this chunk) covers line[first_end + j*hop, + N).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/wavelet.cuh"

namespace vigil::cuda {

constexpr uint32_t kStreamingDenoiseMaxWindow = 4096;

struct DenoiseWindowsParams {
  WaveletFilters filters;
  uint32_t n = 0;            // window length N (power of two, <= kStreamingDenoiseMaxWindow)
  unsigned levels = 0;       // >= 1
  bool soft = true;
  bool per_level = false;    // a sigma per level (else the finest level's for all)
  double universal = 0;      // sqrt(2 ln N) * threshold_scale
  uint32_t lanes = 0;
  uint32_t windows = 0;      // J: windows completing in this chunk
  uint32_t first_end = 0;    // hop - fill: the chunk offset where window 0 completes
  uint32_t hop = 0;
  const float* hist = nullptr;   // [lanes][N]
  const float* in = nullptr;     // lane l at in + l * in_stride
  size_t in_stride = 0;
  const float* weight = nullptr; // [N]
  float* wout = nullptr;         // [lanes][windows][N]: weight * denoised window
};

// Sets the kernel's shared-memory allowance for windows up to n (once, before launches).
cudaError_t prepare_denoise_windows(uint32_t n) noexcept;
// One block per (window, lane): load, DWT, median |detail| by an in-block radix select, VisuShrink
// threshold, inverse DWT, weight.
cudaError_t launch_denoise_windows(const DenoiseWindowsParams& p, cudaStream_t stream) noexcept;

// out[l][t] for t < frames: the ready hop, or a hop finished in this chunk (pending or the previous
// window's second half, plus this window's first half), by (fill + t) / hop windows done.
cudaError_t launch_denoise_emit(const float* d_wout, const float* d_ready, const float* d_pending, uint32_t lanes,
                                uint32_t windows, uint32_t n, uint32_t hop, uint32_t fill, uint32_t frames,
                                float* d_out, size_t out_stride, cudaStream_t stream) noexcept;

// After emit: ready and pending from the chunk's last window (when it had any), and the next
// hist (the line's last N samples) into d_hist_next.
cudaError_t launch_denoise_advance(const float* d_wout, float* d_ready, float* d_pending, const float* d_hist,
                                   const float* d_in, size_t in_stride, uint32_t lanes, uint32_t windows, uint32_t n,
                                   uint32_t hop, uint32_t frames, float* d_hist_next, cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
