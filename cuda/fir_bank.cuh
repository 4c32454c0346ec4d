// CUDA twin of dsp/PartitionedFirBank (uniform layout): the kernels around cuFFT. POD parameters
// and launchers only; FirBankCuda (fir_bank_cuda.hpp) owns the memory and the cuFFT plans.
//
// Layout (all device memory):
//   time     [channels][2B] float      the last two input blocks per channel: [previous | current]
//   fresh    [channels][B+1] float2    the newest block's spectrum (the forward FFT's output)
//   fdl      [channels][P][B+1] float2 input-block spectra, a ring of P slots
//   blocks_started  uint32             blocks begun since reset: the ring position is its value mod P
//   taps     [bands][P][B+1] float2    filter partition spectra, pre-scaled by 1 / 2B
//   acc      [bands*channels][B+1]     sum over partitions, the inverse FFT's input
//   full     [bands*channels][2B]      inverse FFT output; its last B samples are the block's output
//
// A chunk of k >= 2 whole blocks from a block boundary, with one partition, goes through in one
// batch instead (no delay line to carry between its blocks):
//   win   [channels][k][2B]           window j: [block j - 1 | block j] (block -1: time's current)
//   bfresh[channels][k][B+1] float2   their spectra (one batched forward FFT)
//   bacc  [bands*channels][k][B+1]    times the taps (one batched inverse FFT into wout)
//   wout  [bands*channels][k][2B]     window j's result in its last B samples
#pragma once

#include <cuda_runtime_api.h>
#include <vector_types.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

// Copies `frames` samples per channel of a planar input (channel c at d_in + c * in_stride) into
// the current block at offset `fill`; when fill == 0 it first slides the current block into the
// previous one and counts a block begun.
cudaError_t launch_fir_stage_input(const float* d_in, size_t in_stride, uint32_t frames, uint32_t channels,
                                   uint32_t block, uint32_t fill, float* d_time, uint32_t* d_blocks_started,
                                   cudaStream_t stream) noexcept;

// With pos = blocks_started mod P: fdl[c][pos] = fresh[c], and
// acc[b*C + c][k] = sum_{p < parts[b]} fdl[c][(pos - p) mod P][k] * taps[b][p][k].
// Nothing of the position is on the host: the same launches replay as a CUDA graph.
cudaError_t launch_fir_accumulate(float2* d_fdl, const float2* d_fresh, const float2* d_taps, const uint32_t* d_parts,
                                  const uint32_t* d_blocks_started, uint32_t bands, uint32_t channels,
                                  uint32_t partitions, uint32_t bins, float2* d_acc, cudaStream_t stream) noexcept;

// Copies `frames` ready samples (from offset `fill` of each lane's block output, the last B
// samples of its 2B inverse FFT) to a planar output (lane at d_out + lane * out_stride).
cudaError_t launch_fir_copy_output(const float* d_full, uint32_t lanes, uint32_t block, uint32_t fill,
                                   uint32_t frames, float* d_out, size_t out_stride, cudaStream_t stream) noexcept;

// The batched chunk (see the layout above): windows, spectra times taps, output (block 0 from
// `full`, block j from window j - 1), and the carry that leaves time, full and blocks_started as
// block by block would.
cudaError_t launch_fir_batch_windows(const float* d_in, size_t in_stride, const float* d_time, uint32_t channels,
                                     uint32_t block, uint32_t k, float* d_win, cudaStream_t stream) noexcept;
cudaError_t launch_fir_batch_multiply(const float2* d_fresh, const float2* d_taps, uint32_t bands, uint32_t channels,
                                      uint32_t k, uint32_t bins, float2* d_acc, cudaStream_t stream) noexcept;
cudaError_t launch_fir_batch_output(const float* d_full, const float* d_wout, uint32_t lanes, uint32_t block,
                                    uint32_t k, float* d_out, size_t out_stride, cudaStream_t stream) noexcept;
cudaError_t launch_fir_batch_carry(const float* d_in, size_t in_stride, const float* d_wout, uint32_t lanes,
                                   uint32_t channels, uint32_t block, uint32_t k, float* d_time, float* d_full,
                                   uint32_t* d_blocks_started, cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
