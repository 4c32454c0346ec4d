#include "cuda/fir_bank_cuda.hpp"

#include <cufft.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/fir_bank.cuh"

namespace vigil::cuda {

FirBankCuda::FirBankCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels, uint32_t block,
                         cudaStream_t stream, uint32_t batch_frames)
    : bands_(uint32_t(band_taps.size())), channels_(channels), block_(block), bins_(block + 1), stream_(stream) {
  if (band_taps.empty() || band_taps.size() > 256)
    throw std::invalid_argument("FirBankCuda: bands must be 1..256, got " + std::to_string(band_taps.size()));
  if (channels < 1 || channels > 4096)
    throw std::invalid_argument("FirBankCuda: channels must be 1..4096, got " + std::to_string(channels));
  if (size_t(band_taps.size()) * channels > 65535)  // a grid dimension of the kernels
    throw std::invalid_argument("FirBankCuda: bands x channels must be at most 65535, got " +
                                std::to_string(band_taps.size() * channels));
  if (block < 16 || block > 65536 || (block & (block - 1)))
    throw std::invalid_argument("FirBankCuda: block must be a power of two 16..65536, got " + std::to_string(block));
  std::vector<uint32_t> parts;
  for (size_t b = 0; b < band_taps.size(); ++b) {
    if (band_taps[b].empty() || band_taps[b].size() > (size_t(1) << 20))
      throw std::invalid_argument("FirBankCuda: band " + std::to_string(b) + " taps must be 1..1048576, got " +
                                  std::to_string(band_taps[b].size()));
    parts.push_back(uint32_t((band_taps[b].size() + block - 1) / block));
    parts_ = std::max(parts_, parts.back());
  }
  const size_t n = 2 * size_t(block);
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_time_), size_t(channels_) * n * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(&d_fdl_, size_t(channels_) * parts_ * bins_ * sizeof(float2)));
    VIGIL_CUDA_CHECK(cudaMalloc(&d_fresh_, size_t(channels_) * bins_ * sizeof(float2)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_blocks_started_), sizeof(uint32_t)));
    VIGIL_CUDA_CHECK(cudaMalloc(&d_taps_, size_t(bands_) * parts_ * bins_ * sizeof(float2)));
    VIGIL_CUDA_CHECK(cudaMalloc(&d_acc_, size_t(bands_) * channels_ * bins_ * sizeof(float2)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_full_), size_t(bands_) * channels_ * n * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_parts_), parts.size() * sizeof(uint32_t)));
    VIGIL_CUDA_CHECK(cudaMemcpy(d_parts_, parts.data(), parts.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));

    // Tap spectra (set_taps): a frame per partition, its own plan and staging kept for reloads.
    VIGIL_CUDA_CHECK(cudaMalloc(&d_frames_, size_t(bands_) * parts_ * n * sizeof(float)));
    h_frames_.assign(size_t(bands_) * parts_ * n, 0.0f);
    int dims[1] = {int(n)};
    cufftHandle taps_plan = 0;
    check_cufft(cufftPlanMany(&taps_plan, 1, dims, nullptr, 1, int(n), nullptr, 1, int(bins_), CUFFT_R2C,
                              int(bands_ * parts_)),
                "plan (taps)");
    plan_taps_ = int(taps_plan);
    check_cufft(cufftSetStream(taps_plan, stream_), "set stream");
    band_parts_ = parts;
    VIGIL_CUDA_CHECK(set_taps(band_taps));
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));

    // Forward: one transform per channel into `fresh`, always the same pointers (the accumulate
    // kernel files it in the delay line at the position kept on the device): graph-capturable.
    int in_embed[1] = {int(n)}, out_embed[1] = {int(bins_)};
    cufftHandle fwd = 0, inv = 0;
    check_cufft(cufftPlanMany(&fwd, 1, dims, in_embed, 1, int(n), out_embed, 1, int(bins_), CUFFT_R2C,
                              int(channels_)),
                "plan (forward)");
    plan_forward_ = int(fwd);
    check_cufft(cufftPlanMany(&inv, 1, dims, out_embed, 1, int(bins_), in_embed, 1, int(n), CUFFT_C2R,
                              int(bands_ * channels_)),
                "plan (inverse)");
    plan_inverse_ = int(inv);
    check_cufft(cufftSetStream(fwd, stream_), "set stream");
    check_cufft(cufftSetStream(inv, stream_), "set stream");
    if (parts_ == 1 && batch_frames >= 2 * block && batch_frames % block == 0) {
      const uint32_t k = batch_frames / block;
      batch_blocks_ = k;
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_win_), size_t(channels_) * k * n * sizeof(float)));
      VIGIL_CUDA_CHECK(cudaMalloc(&d_bfresh_, size_t(channels_) * k * bins_ * sizeof(float2)));
      VIGIL_CUDA_CHECK(cudaMalloc(&d_bacc_, size_t(bands_) * channels_ * k * bins_ * sizeof(float2)));
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_wout_), size_t(bands_) * channels_ * k * n * sizeof(float)));
      cufftHandle bfwd = 0, binv = 0;
      check_cufft(cufftPlanMany(&bfwd, 1, dims, in_embed, 1, int(n), out_embed, 1, int(bins_), CUFFT_R2C,
                                int(channels_ * k)),
                  "plan (batched forward)");
      plan_bforward_ = int(bfwd);
      check_cufft(cufftPlanMany(&binv, 1, dims, out_embed, 1, int(bins_), in_embed, 1, int(n), CUFFT_C2R,
                                int(bands_ * channels_ * k)),
                  "plan (batched inverse)");
      plan_binverse_ = int(binv);
      check_cufft(cufftSetStream(bfwd, stream_), "set stream");
      check_cufft(cufftSetStream(binv, stream_), "set stream");
    }
    reset();
  } catch (...) {
    release();
    throw;
  }
}

FirBankCuda::~FirBankCuda() { release(); }

void FirBankCuda::release() noexcept {
  if (plan_forward_) cufftDestroy(cufftHandle(plan_forward_));
  if (plan_inverse_) cufftDestroy(cufftHandle(plan_inverse_));
  if (plan_taps_) cufftDestroy(cufftHandle(plan_taps_));
  if (plan_bforward_) cufftDestroy(cufftHandle(plan_bforward_));
  if (plan_binverse_) cufftDestroy(cufftHandle(plan_binverse_));
  plan_forward_ = plan_inverse_ = plan_taps_ = plan_bforward_ = plan_binverse_ = 0;
  for (void* p : {static_cast<void*>(d_time_), d_fdl_, d_fresh_, d_taps_, d_acc_, static_cast<void*>(d_full_),
                  static_cast<void*>(d_parts_), d_frames_, static_cast<void*>(d_blocks_started_),
                  static_cast<void*>(d_win_), d_bfresh_, d_bacc_, static_cast<void*>(d_wout_)})
    cudaFree(p);
  d_win_ = d_wout_ = nullptr;
  d_bfresh_ = d_bacc_ = nullptr;
  d_fresh_ = nullptr;
  d_blocks_started_ = nullptr;
  d_frames_ = nullptr;
  d_time_ = d_full_ = nullptr;
  d_fdl_ = d_taps_ = d_acc_ = nullptr;
  d_parts_ = nullptr;
}

void FirBankCuda::reset() {
  const size_t n = 2 * size_t(block_);
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_time_, 0, size_t(channels_) * n * sizeof(float), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_fdl_, 0, size_t(channels_) * parts_ * bins_ * sizeof(float2), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_full_, 0, size_t(bands_) * channels_ * n * sizeof(float), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_blocks_started_, 0, sizeof(uint32_t), stream_));
  fill_ = 0;
}

cudaError_t FirBankCuda::set_taps(const std::vector<std::vector<float>>& band_taps) noexcept {
  if (band_taps.size() != bands_) return cudaErrorInvalidValue;
  for (size_t b = 0; b < band_taps.size(); ++b)
    if (band_taps[b].empty() || (band_taps[b].size() + block_ - 1) / block_ != band_parts_[b]) return cudaErrorInvalidValue;
  // Each partition zero-padded to 2B and pre-scaled by 1/2B (the inverse FFT's factor).
  const size_t n = 2 * size_t(block_);
  std::fill(h_frames_.begin(), h_frames_.end(), 0.0f);
  for (uint32_t b = 0; b < bands_; ++b)
    for (size_t i = 0; i < band_taps[b].size(); ++i)
      h_frames_[(size_t(b) * parts_ + i / block_) * n + i % block_] = band_taps[b][i] / float(n);
  VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_frames_, h_frames_.data(), h_frames_.size() * sizeof(float),
                                             cudaMemcpyHostToDevice, stream_));
  if (cufftExecR2C(cufftHandle(plan_taps_), static_cast<float*>(d_frames_), static_cast<cufftComplex*>(d_taps_)) !=
      CUFFT_SUCCESS)
    return cudaErrorLaunchFailure;
  return cudaSuccess;
}

cudaError_t FirBankCuda::run_block() noexcept {
  if (cufftExecR2C(cufftHandle(plan_forward_), d_time_, static_cast<cufftComplex*>(d_fresh_)) != CUFFT_SUCCESS)
    return cudaErrorLaunchFailure;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_accumulate(static_cast<float2*>(d_fdl_), static_cast<const float2*>(d_fresh_),
                                                   static_cast<const float2*>(d_taps_), d_parts_, d_blocks_started_,
                                                   bands_, channels_, parts_, bins_, static_cast<float2*>(d_acc_),
                                                   stream_));
  if (cufftExecC2R(cufftHandle(plan_inverse_), static_cast<cufftComplex*>(d_acc_), d_full_) != CUFFT_SUCCESS)
    return cudaErrorLaunchFailure;
  return cudaSuccess;
}

cudaError_t FirBankCuda::set_stream(cudaStream_t stream) noexcept {
  for (const int plan : {plan_forward_, plan_inverse_, plan_taps_, plan_bforward_, plan_binverse_})
    if (plan && cufftSetStream(cufftHandle(plan), stream) != CUFFT_SUCCESS) return cudaErrorInvalidValue;
  stream_ = stream;
  return cudaSuccess;
}

uint32_t FirBankCuda::preferred_block(size_t taps) noexcept {
  uint32_t block = 4096;  // FFT 8192: one pass of cuFFT
  while (block < taps && block < 65536) block *= 2;
  return block;
}

cudaError_t FirBankCuda::run_batch(const float* d_in, size_t in_stride, float* d_out, size_t out_stride) noexcept {
  const uint32_t k = batch_blocks_, lanes = bands_ * channels_;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_batch_windows(d_in, in_stride, d_time_, channels_, block_, k, d_win_, stream_));
  if (cufftExecR2C(cufftHandle(plan_bforward_), d_win_, static_cast<cufftComplex*>(d_bfresh_)) != CUFFT_SUCCESS)
    return cudaErrorLaunchFailure;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_batch_multiply(static_cast<const float2*>(d_bfresh_),
                                                       static_cast<const float2*>(d_taps_), bands_, channels_, k, bins_,
                                                       static_cast<float2*>(d_bacc_), stream_));
  if (cufftExecC2R(cufftHandle(plan_binverse_), static_cast<cufftComplex*>(d_bacc_), d_wout_) != CUFFT_SUCCESS)
    return cudaErrorLaunchFailure;
  VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_batch_output(d_full_, d_wout_, lanes, block_, k, d_out, out_stride, stream_));
  return launch_fir_batch_carry(d_in, in_stride, d_wout_, lanes, channels_, block_, k, d_time_, d_full_,
                                d_blocks_started_, stream_);
}

cudaError_t FirBankCuda::process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out,
                                 size_t out_stride) noexcept {
  if (batch_blocks_ && fill_ == 0 && frames == batch_blocks_ * block_) return run_batch(d_in, in_stride, d_out, out_stride);
  uint32_t done = 0;
  while (done < frames) {
    const uint32_t k = std::min(block_ - fill_, frames - done);
    VIGIL_CUDA_RETURN_IF_ERROR(launch_fir_stage_input(d_in + done, in_stride, k, channels_, block_, fill_, d_time_,
                                                      d_blocks_started_, stream_));
    VIGIL_CUDA_RETURN_IF_ERROR(
        launch_fir_copy_output(d_full_, bands_ * channels_, block_, fill_, k, d_out + done, out_stride, stream_));
    fill_ += k;
    done += k;
    if (fill_ == block_) {
      VIGIL_CUDA_RETURN_IF_ERROR(run_block());
      fill_ = 0;
    }
  }
  return cudaSuccess;
}

}  // namespace vigil::cuda
