#include "cuda/overlap_save_cuda.hpp"

#include <cufft.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/overlap_save.cuh"

#if defined(VIGIL_CUFFT_LTO_CALLBACKS) && CUDART_VERSION >= 13000
#include <cufftXt.h>

#include "cuda/os_multiply_callback.cuh"
#include "os_multiply_callback_fatbin.h"  // vigil_os_multiply_fatbin: LTO-IR made by cuda/CMakeLists.txt
#define VIGIL_OS_FUSED_MULTIPLY 1
#endif

namespace vigil::cuda {
namespace {


template <typename T>
void device_alloc(T*& p, size_t count) {
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), count * sizeof(T)));
}

}  // namespace

OverlapSaveCuda::OverlapSaveCuda(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                                 uint32_t fft_size, uint32_t max_frames, cudaStream_t stream, bool fuse_multiply)
    : bands_(uint32_t(band_taps.size())), channels_(channels), n_(fft_size), taps_len_(0), hop_(0),
      bins_(fft_size / 2 + 1), max_frames_(max_frames), max_blocks_(0), line_len_(0), ring_len_(0), stream_(stream) {
  if (band_taps.empty() || band_taps.size() > 256)
    throw std::invalid_argument("OverlapSaveCuda: bands must be 1..256, got " + std::to_string(band_taps.size()));
  if (channels < 1 || channels > 4096)
    throw std::invalid_argument("OverlapSaveCuda: channels must be 1..4096, got " + std::to_string(channels));
  if (fft_size < 32 || fft_size > (1u << 22) || (fft_size & (fft_size - 1)))
    throw std::invalid_argument("OverlapSaveCuda: fft_size must be a power of two 32..4194304, got " +
                                std::to_string(fft_size));
  if (max_frames < 1 || max_frames > (1u << 26))
    throw std::invalid_argument("OverlapSaveCuda: max_frames must be 1..67108864, got " + std::to_string(max_frames));
  for (size_t b = 0; b < band_taps.size(); ++b) {
    if (band_taps[b].empty())
      throw std::invalid_argument("OverlapSaveCuda: band " + std::to_string(b) + " has no taps");
    taps_len_ = std::max<uint32_t>(taps_len_, uint32_t(band_taps[b].size()));
  }
  if (taps_len_ >= fft_size)
    throw std::invalid_argument("OverlapSaveCuda: fft_size " + std::to_string(fft_size) + " must exceed the longest filter (" +
                                std::to_string(taps_len_) + " taps)");
  hop_ = n_ - taps_len_ + 1;
  max_blocks_ = (hop_ - 1 + max_frames_) / hop_;
  line_len_ = size_t(taps_len_ - 1) + (hop_ - 1) + max_frames_;
  ring_len_ = size_t(max_frames_) + 2 * size_t(hop_);
  const size_t lanes = size_t(bands_) * channels_, spectra = size_t(max_blocks_) * channels_;
  try {
    device_alloc(d_line_[0], size_t(channels_) * line_len_);
    device_alloc(d_line_[1], size_t(channels_) * line_len_);
    device_alloc(d_frames_, spectra * n_);
    device_alloc(reinterpret_cast<float2*&>(d_prod_), size_t(bands_) * spectra * bins_);
    device_alloc(reinterpret_cast<float2*&>(d_taps_), size_t(bands_) * bins_);
    device_alloc(d_time_, size_t(bands_) * spectra * n_);
    device_alloc(d_ring_, lanes * ring_len_);

    // Tap spectra, pre-scaled by 1/N (the inverse FFT's factor).
    std::vector<float> padded(size_t(bands_) * n_, 0.0f);
    for (uint32_t b = 0; b < bands_; ++b)
      for (size_t i = 0; i < band_taps[b].size(); ++i) padded[size_t(b) * n_ + i] = band_taps[b][i] / float(n_);
    float* d_padded = nullptr;
    device_alloc(d_padded, padded.size());
    cufftHandle plan = 0;
    int dims[1] = {int(n_)};
    try {
      VIGIL_CUDA_CHECK(cudaMemcpy(d_padded, padded.data(), padded.size() * sizeof(float), cudaMemcpyHostToDevice));
      check_cufft(cufftPlanMany(&plan, 1, dims, nullptr, 1, int(n_), nullptr, 1, int(bins_), CUFFT_R2C, int(bands_)),
                  "plan (taps)");
      check_cufft(cufftExecR2C(plan, d_padded, static_cast<cufftComplex*>(d_taps_)), "exec (taps)");
      VIGIL_CUDA_CHECK(cudaDeviceSynchronize());
    } catch (...) {
      if (plan) cufftDestroy(plan);
      cudaFree(d_padded);
      throw;
    }
    cufftDestroy(plan);
    cudaFree(d_padded);

    cufftHandle fwd = 0, inv = 0;
    fused_multiply_ = fuse_multiply && n_ >= kFuseFromFftSize && plan_forward_with_multiply(int(spectra));
    if (fused_multiply_) {
      fwd = cufftHandle(plan_forward_);
    } else {
      device_alloc(reinterpret_cast<float2*&>(d_spec_), spectra * bins_);
      check_cufft(cufftPlanMany(&fwd, 1, dims, nullptr, 1, int(n_), nullptr, 1, int(bins_), CUFFT_R2C, int(spectra)),
                  "plan (forward)");
      plan_forward_ = int(fwd);
    }
    check_cufft(cufftPlanMany(&inv, 1, dims, nullptr, 1, int(bins_), nullptr, 1, int(n_), CUFFT_C2R,
                              int(size_t(bands_) * spectra)),
                "plan (inverse)");
    plan_inverse_ = int(inv);
    check_cufft(cufftSetStream(fwd, stream_), "set stream");
    check_cufft(cufftSetStream(inv, stream_), "set stream");
    reset();
  } catch (...) {
    release();
    throw;
  }
}

OverlapSaveCuda::~OverlapSaveCuda() { release(); }

bool OverlapSaveCuda::plan_forward_with_multiply([[maybe_unused]] int spectra) {
#ifdef VIGIL_OS_FUSED_MULTIPLY
  const OsMultiplyInfo info{static_cast<const float2*>(d_taps_), static_cast<unsigned long long>(spectra) * bins_,
                            bands_, bins_};
  device_alloc(reinterpret_cast<OsMultiplyInfo*&>(d_multiply_info_), 1);  // freed by release() if kept
  VIGIL_CUDA_CHECK(cudaMemcpy(d_multiply_info_, &info, sizeof info, cudaMemcpyHostToDevice));
  void* caller_info[1] = {d_multiply_info_};  // one per GPU of the plan
  int dims[1] = {int(n_)};
  size_t work = 0;
  cufftHandle plan = 0;
  const bool made =
      cufftCreate(&plan) == CUFFT_SUCCESS &&
      cufftXtSetJITCallback(plan, "vigil_os_multiply_store", vigil_os_multiply_fatbin, sizeof vigil_os_multiply_fatbin,
                            CUFFT_CB_ST_COMPLEX, caller_info) == CUFFT_SUCCESS &&
      cufftMakePlanMany(plan, 1, dims, nullptr, 1, int(n_), nullptr, 1, int(bins_), CUFFT_R2C, spectra, &work) ==
          CUFFT_SUCCESS;
  if (!made) {
    if (plan) cufftDestroy(plan);
    cudaFree(d_multiply_info_);
    d_multiply_info_ = nullptr;
    return false;
  }
  plan_forward_ = int(plan);
  return true;
#else
  return false;
#endif
}

void OverlapSaveCuda::release() noexcept {
  if (plan_forward_) cufftDestroy(cufftHandle(plan_forward_));
  if (plan_inverse_) cufftDestroy(cufftHandle(plan_inverse_));
  plan_forward_ = plan_inverse_ = 0;
  for (void* p : {static_cast<void*>(d_line_[0]), static_cast<void*>(d_line_[1]), static_cast<void*>(d_frames_), d_spec_,
                  d_prod_, d_taps_, d_multiply_info_, static_cast<void*>(d_time_), static_cast<void*>(d_ring_)})
    cudaFree(p);
  d_line_[0] = d_line_[1] = d_frames_ = d_time_ = d_ring_ = nullptr;
  d_spec_ = d_prod_ = d_taps_ = d_multiply_info_ = nullptr;
}

void OverlapSaveCuda::reset() {
  for (float* line : d_line_)
    VIGIL_CUDA_CHECK(cudaMemsetAsync(line, 0, size_t(channels_) * line_len_ * sizeof(float), stream_));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_ring_, 0, size_t(bands_) * channels_ * ring_len_ * sizeof(float), stream_));
  cur_ = 0;
  fill_ = 0;
  blocks_done_ = 0;
  emitted_ = 0;
}

cudaError_t OverlapSaveCuda::process(const float* d_in, size_t in_stride, uint32_t frames, float* d_out,
                                     size_t out_stride) noexcept {
  if (frames > max_frames_) return cudaErrorInvalidValue;
  if (frames == 0) return cudaSuccess;
  const size_t history = taps_len_ - 1;
  float* line = d_line_[cur_];
  // The virtual line: the device-side history and pending samples (split of them), then this
  // call's input read in place.
  const size_t split = history + fill_;
  const uint32_t avail = fill_ + frames;
  const uint32_t blocks = avail / hop_;
  // Output t of this call is y[t - hop]. Those y that earlier calls computed (or the initial
  // zeros) wait in the ring at position (y index + hop); y computed now goes straight out when
  // due in this call (relative position < frames), else to the ring.
  const uint64_t base_rel = (blocks_done_ + 1) * hop_ - emitted_;  // in (0, hop]
  const uint32_t from_ring = uint32_t(std::min<uint64_t>(frames, base_rel));
  VIGIL_CUDA_RETURN_IF_ERROR(launch_os_emit(d_ring_, bands_ * channels_, ring_len_, size_t(emitted_ % ring_len_),
                                            from_ring, d_out, out_stride, stream_));
  if (blocks > 0) {
    // Every completed block at once: window, FFT, multiply by each band, inverse FFT. The batched
    // plans cover max_blocks_; blocks beyond this call's are stale and never read.
    VIGIL_CUDA_RETURN_IF_ERROR(
        launch_os_gather(line, line_len_, split, d_in, in_stride, channels_, blocks, hop_, n_, d_frames_, stream_));
    if (fused_multiply_) {  // the products stored by the transform itself, for every band
      if (cufftExecR2C(cufftHandle(plan_forward_), d_frames_, static_cast<cufftComplex*>(d_prod_)) != CUFFT_SUCCESS)
        return cudaErrorLaunchFailure;
    } else {
      if (cufftExecR2C(cufftHandle(plan_forward_), d_frames_, static_cast<cufftComplex*>(d_spec_)) != CUFFT_SUCCESS)
        return cudaErrorLaunchFailure;
      VIGIL_CUDA_RETURN_IF_ERROR(launch_os_multiply(static_cast<const float2*>(d_spec_),
                                                    static_cast<const float2*>(d_taps_), bands_, blocks * channels_,
                                                    max_blocks_ * channels_, bins_, static_cast<float2*>(d_prod_),
                                                    stream_));
    }
    if (cufftExecC2R(cufftHandle(plan_inverse_), static_cast<cufftComplex*>(d_prod_), d_time_) != CUFFT_SUCCESS)
      return cudaErrorLaunchFailure;
    const size_t start = size_t((blocks_done_ + 1) * hop_ % ring_len_);
    VIGIL_CUDA_RETURN_IF_ERROR(launch_os_scatter(d_time_, bands_, channels_, blocks, max_blocks_, hop_, n_,
                                                 taps_len_ - 1, d_ring_, ring_len_, start, base_rel, frames, d_out,
                                                 out_stride, stream_));
    // Keep the history and the new partial block, in the other line buffer.
    const size_t from = size_t(blocks) * hop_, keep = history + (avail - blocks * hop_);
    VIGIL_CUDA_RETURN_IF_ERROR(
        launch_os_shift(line, split, d_in, in_stride, d_line_[1 - cur_], line_len_, channels_, from, keep, stream_));
    cur_ = 1 - cur_;
    fill_ = avail - blocks * hop_;
    blocks_done_ += blocks;
  } else {
    VIGIL_CUDA_RETURN_IF_ERROR(launch_os_append(d_in, in_stride, frames, channels_, line, line_len_, split, stream_));
    fill_ = avail;
  }
  emitted_ += frames;
  return cudaSuccess;
}

}  // namespace vigil::cuda
