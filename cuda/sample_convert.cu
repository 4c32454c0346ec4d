// Kernel: one thread per interleaved sample, so reads coalesce; per-block shared counters so each
// block adds to global memory once per channel. The scale is one float multiply, as on the CPU,
// so results are bit-identical.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "cuda/launch_check.cuh"
#include "core/stream_format.hpp"
#include "cuda/sample_convert.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ inline float convert_one(T x, float scale, bool& clipped, bool& non_finite) {
  // The CPU rule (dsp/sample_convert.hpp): int32 clips where its top 24 bits are at full scale.
  constexpr T kMin = sizeof(T) == 4 ? T(std::numeric_limits<T>::min() + 0xFF) : std::numeric_limits<T>::min();
  constexpr T kMax = sizeof(T) == 4 ? T(std::numeric_limits<T>::max() - 0xFF) : std::numeric_limits<T>::max();
  clipped = x <= kMin || x >= kMax;
  non_finite = false;
  return static_cast<float>(x) * scale;
}

template <>
__device__ inline float convert_one<float>(float x, float scale, bool& clipped, bool& non_finite) {
  non_finite = !isfinite(x);
  if (non_finite) x = 0.0f;
  clipped = fabsf(x) >= 1.0f;
  return x * scale;
}

template <typename T>
__global__ void convert_to_planar_kernel(const T* __restrict__ direct, const void* const* cell, uint32_t frames,
                                         uint32_t channels, float scale, float* __restrict__ out, size_t stride,
                                         unsigned long long* counts) {
  extern __shared__ unsigned int s_counts[];  // 2 x channels: clipped, non-finite
  const T* __restrict__ in = cell ? static_cast<const T*>(*cell) : direct;
  for (uint32_t i = threadIdx.x; i < 2 * channels; i += blockDim.x) s_counts[i] = 0;
  __syncthreads();

  const size_t total = size_t(frames) * channels;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t f = uint32_t(i / channels);
    const uint32_t c = uint32_t(i - size_t(f) * channels);
    bool clipped, non_finite;
    out[size_t(c) * stride + f] = convert_one<T>(in[i], scale, clipped, non_finite);
    if (clipped) atomicAdd(&s_counts[2 * c], 1u);
    if (non_finite) atomicAdd(&s_counts[2 * c + 1], 1u);
  }
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < 2 * channels; i += blockDim.x)
    if (s_counts[i]) atomicAdd(&counts[i], static_cast<unsigned long long>(s_counts[i]));
}

}  // namespace

cudaError_t launch_convert_to_planar(const ConvertParams& p, cudaStream_t stream) {
  if (p.channels < 1 || p.channels > kMaxChannels || p.frames > (1u << 26) || p.out_stride_frames < p.frames ||
      (p.frames > 0 && ((!p.d_in && !p.d_in_cell) || !p.d_out)) || !p.d_counts)
    return cudaErrorInvalidValue;
  if (p.frames == 0) return cudaSuccess;
  const size_t total = size_t(p.frames) * p.channels;
  // Enough blocks to fill the GPU; the grid-stride loop covers the rest.
  const unsigned blocks = unsigned(std::min<size_t>((total + kThreads - 1) / kThreads, 65535));
  const size_t shared = 2 * size_t(p.channels) * sizeof(unsigned int);  // 32 KiB at 4096 channels
  const auto launch = [&](auto* typed) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(typed)>>;
    convert_to_planar_kernel<T><<<blocks, kThreads, shared, stream>>>(typed, p.d_in_cell, p.frames, p.channels, p.scale,
                                                                      p.d_out, p.out_stride_frames, p.d_counts);
  };
  switch (p.format) {
    case SampleFormat::kInt16: launch(static_cast<const int16_t*>(p.d_in)); break;
    case SampleFormat::kInt32: launch(static_cast<const int32_t*>(p.d_in)); break;
    case SampleFormat::kFloat32: launch(static_cast<const float*>(p.d_in)); break;
  }
  return after_launch(stream);
}

}  // namespace vigil::cuda
