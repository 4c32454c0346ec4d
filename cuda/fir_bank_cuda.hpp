// FirBankCuda: the CUDA twin of dsp/PartitionedFirBank with the uniform layout (partition B,
// FFT 2B): N band filters over C channels, device memory in and out, one forward cuFFT per
// channel per block shared by every band, one batched inverse cuFFT over all bands x channels.
// Output equals lfilter(h, 1, x) delayed by B (the CPU class's latency). Host C++ only.
//
// A filter of one partition (taps <= B) given batch_frames >= 2B takes a call of exactly
// batch_frames / B whole blocks from a block boundary (the pipeline's full chunk) in one batch:
// every block's FFT in one transform, the same output and state as block by block.
//
// Tap swap: set_taps() (the crossfade is FirBankCudaStage's). Every launch uses the same pointers
// and the delay line's position is kept on the device, so a call that starts and ends on block
// boundaries (fill() == 0 before and after) can be captured once as a CUDA graph and replayed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cuda/fir_filter_cuda.hpp"

namespace vigil::cuda {

class FirBankCuda final : public FirFilterCuda {
 public:
  // band_taps: 1..256 bands of 1..2^20 taps; channels: 1..4096, bands x channels <= 65535;
  // block: a power of two 16..65536;
  // batch_frames: the calls to take in one batch (above; 0: none). All device memory and cuFFT
  // plans are made here. Throws std::invalid_argument or CudaError.
  FirBankCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, uint32_t block,
              cudaStream_t stream = nullptr, uint32_t batch_frames = 0);

  // The block the GPU runs best for a filter of `taps` (most): one partition, its FFT small
  // enough for cuFFT to do in one pass (2B <= 8192) where the taps allow. The caller caps it by
  // its latency.
  static uint32_t preferred_block(size_t taps) noexcept;
  ~FirBankCuda() override;
  FirBankCuda(const FirBankCuda&) = delete;
  FirBankCuda& operator=(const FirBankCuda&) = delete;

  // Enqueues on the stream given at construction. d_in: channel c at d_in + c * in_stride;
  // d_out: band b, channel c at d_out + (b * channels + c) * out_stride. Any frames count.
  // RT-safe: no allocation, no synchronisation. Returns the first CUDA or cuFFT failure
  // (cuFFT failures as cudaErrorLaunchFailure).
  cudaError_t process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out, size_t out_stride) noexcept override;

  // Clears the history (enqueued). Throws CudaError.
  void reset() override;
  // Later calls enqueue on `stream` (a reload primes the spare on a stream of its own). The
  // caller orders the work across the two streams. Returns the first cuFFT failure as
  // cudaErrorInvalidValue.
  cudaError_t set_stream(cudaStream_t stream) noexcept override;
  cudaStream_t stream() const noexcept { return stream_; }
  // New taps, same band count and partitions per band (tap counts within the same multiple of
  // the block): the tap spectra are recomputed on the stream, nothing is allocated (a reload on
  // the pipeline thread). History is kept; the caller resets or crossfades. Returns the first error.
  cudaError_t set_taps(const std::vector<std::vector<float>>& band_taps) noexcept override;

  uint32_t bands() const noexcept override { return bands_; }
  uint32_t channels() const noexcept override { return channels_; }
  uint32_t block() const noexcept { return block_; }
  uint32_t partitions() const noexcept { return parts_; }
  uint32_t latency_frames() const noexcept override { return block_; }
  // Frames of the current block received so far (0: the next call starts on a block boundary).
  uint32_t fill() const noexcept override { return fill_; }
  // Blocks a batched call takes (0: no batching).
  uint32_t batch_blocks() const noexcept { return batch_blocks_; }

 private:
  cudaError_t run_block() noexcept;
  cudaError_t run_batch(const float* d_in, size_t in_stride, float* d_out, size_t out_stride) noexcept;
  void release() noexcept;  // frees everything (destructor, and a constructor that fails)

  uint32_t bands_, channels_, block_, parts_ = 0, bins_;
  cudaStream_t stream_;
  float* d_time_ = nullptr;
  void* d_fdl_ = nullptr;   // float2
  void* d_fresh_ = nullptr; // float2: the newest block's spectrum
  uint32_t* d_blocks_started_ = nullptr;
  void* d_taps_ = nullptr;  // float2
  void* d_acc_ = nullptr;   // float2
  float* d_full_ = nullptr;
  uint32_t* d_parts_ = nullptr;
  void* d_frames_ = nullptr;       // float: tap partitions as FFT frames (set_taps)
  std::vector<float> h_frames_;    // their host staging
  std::vector<uint32_t> band_parts_;
  int plan_forward_ = 0, plan_inverse_ = 0, plan_taps_ = 0;  // cufftHandle
  uint32_t fill_ = 0;
  // The batched chunk (fir_bank.cuh's layout), when batch_blocks_ > 0.
  uint32_t batch_blocks_ = 0;
  float* d_win_ = nullptr;
  void* d_bfresh_ = nullptr;  // float2
  void* d_bacc_ = nullptr;    // float2
  float* d_wout_ = nullptr;
  int plan_bforward_ = 0, plan_binverse_ = 0;
};

}  // namespace vigil::cuda
