#include "cuda/sample_convert_cuda.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "core/stream_format.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/sample_convert.cuh"

namespace vigil::cuda {

SampleConvertCuda::SampleConvertCuda(uint32_t max_frames, uint32_t channels)
    : max_frames_(max_frames), channels_(channels) {
  if (max_frames < 1 || max_frames > (1u << 26))
    throw std::invalid_argument("SampleConvertCuda: max_frames must be 1..67108864, got " + std::to_string(max_frames));
  if (channels < 1 || channels > kMaxChannels)
    throw std::invalid_argument("SampleConvertCuda: channels must be 1.." + std::to_string(kMaxChannels) + ", got " +
                                std::to_string(channels));
  try {
    VIGIL_CUDA_CHECK(cudaMalloc(&d_in_, size_t(max_frames) * channels * 4));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out_), size_t(max_frames) * channels * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_counts_), 2 * channels * sizeof(unsigned long long)));
  } catch (...) {
    cudaFree(d_in_);
    cudaFree(d_out_);
    cudaFree(d_counts_);
    throw;
  }
}

SampleConvertCuda::~SampleConvertCuda() {
  cudaFree(d_in_);
  cudaFree(d_out_);
  cudaFree(d_counts_);
}

cudaError_t SampleConvertCuda::enqueue(const void* d_in, SampleFormat format, uint32_t frames, float scale,
                                       float* d_out, size_t out_stride_frames, cudaStream_t stream) noexcept {
  ConvertParams p;
  p.d_in = d_in;
  p.format = format;
  p.frames = frames;
  p.channels = channels_;
  p.scale = scale;
  p.d_out = d_out;
  p.out_stride_frames = out_stride_frames;
  p.d_counts = d_counts_;
  return launch_convert_to_planar(p, stream);
}

void SampleConvertCuda::convert(const void* h_in, SampleFormat format, uint32_t frames, float scale, float* out,
                                size_t out_stride_frames, ConvertCounts* counts, cudaStream_t stream) {
  if (frames > max_frames_)
    throw std::invalid_argument("SampleConvertCuda::convert: frames must be <= " + std::to_string(max_frames_) +
                                ", got " + std::to_string(frames));
  const size_t in_bytes = size_t(frames) * channels_ * bytes_per_sample(format);
  VIGIL_CUDA_CHECK(cudaMemsetAsync(d_counts_, 0, 2 * channels_ * sizeof(unsigned long long), stream));
  if (frames > 0) VIGIL_CUDA_CHECK(cudaMemcpyAsync(d_in_, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
  VIGIL_CUDA_CHECK(enqueue(d_in_, format, frames, scale, d_out_, frames, stream));
  if (frames > 0)
    VIGIL_CUDA_CHECK(cudaMemcpy2DAsync(out, out_stride_frames * sizeof(float), d_out_, size_t(frames) * sizeof(float),
                                       size_t(frames) * sizeof(float), channels_, cudaMemcpyDeviceToHost, stream));
  std::vector<unsigned long long> h_counts(2 * channels_);
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(h_counts.data(), d_counts_, h_counts.size() * sizeof(unsigned long long),
                                   cudaMemcpyDeviceToHost, stream));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (counts)
    for (uint32_t c = 0; c < channels_; ++c) {
      counts[c].clipped += h_counts[2 * c];
      counts[c].non_finite += h_counts[2 * c + 1];
    }
}

}  // namespace vigil::cuda
