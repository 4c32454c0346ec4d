#include "cuda/launch_check.cuh"
#include "cuda/streaming_denoise.cuh"
#include "cuda/wavelet_device.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// Shared memory of one window's block: the two buffers its levels alternate between.
template <int kLen>
size_t window_shared_bytes(uint32_t n) {
  return 2 * size_t(LevelLayout<kLen == 16>::buffer_floats(n)) * sizeof(float);
}

// The unrolled, haloed kernel takes 16-tap wavelets whose deepest approximation keeps 8 samples.
bool haloed(const DenoiseWindowsParams& p) {
  return p.filters.len == 16 && (p.n >> p.levels) >= LevelLayout<true>::kMinDeepest;
}

// The select's scratch: a count per 8-bit digit and the digit found.
struct BlockSelect {
  uint32_t count[256];
  uint32_t digit, rank, less, max_less;
};

__device__ __forceinline__ uint32_t abs_bits(float x) { return __float_as_uint(x) & 0x7fffffffu; }

// Values a thread holds for a select: count <= kSelectPerThread * kThreads (2048 = the finest
// details of the largest window).
constexpr int kSelectPerThread = kStreamingDenoiseMaxWindow / 2 / kThreads;
static_assert(kSelectPerThread * kThreads * 2 == kStreamingDenoiseMaxWindow, "the finest details fill the block");

// |v[i]| as bit patterns (for non-negative floats the pattern orders as the value), i < count,
// kSelectPerThread a thread (value k of thread t: i = t + k * kThreads), held in registers across
// the select's passes; past count: kNoValue, which no prefix matches and no pattern lies below.
constexpr uint32_t kNoValue = 0xffffffffu;
struct HeldValues {
  uint32_t b[kSelectPerThread];
};

__device__ __forceinline__ HeldValues hold_abs(const float* v, uint32_t count) {
  HeldValues h;
#pragma unroll
  for (int k = 0; k < kSelectPerThread; ++k) {
    const uint32_t i = threadIdx.x + uint32_t(k) * kThreads;
    h.b[k] = i < count ? abs_bits(v[i]) : kNoValue;
  }
  return h;
}

// The bit pattern of the rank-th smallest held value: a radix select, 8 bits a pass, counted in
// shared memory. Every thread gets it; ends synchronised.
__device__ uint32_t block_select_abs(const HeldValues& h, uint32_t rank, BlockSelect& s) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t prefix = 0, mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) s.count[i] = 0;
    __syncthreads();
    // Whole warps meet at the vote: equal digits are counted by one atomic (|details| share their
    // top bits: one counter would otherwise take every add); a warp with no value under the prefix
    // (most of them after the first two passes) goes on at once.
#pragma unroll
    for (int k = 0; k < kSelectPerThread; ++k) {
      const uint32_t b = h.b[k];
      const bool mine = b != kNoValue && (b & mask) == prefix;
      const unsigned voters = __ballot_sync(0xffffffffu, mine);
      if (mine) {
        const uint32_t digit = (b >> shift) & 255u;
        const unsigned peers = __match_any_sync(voters, digit);
        if (lane == uint32_t(__ffs(peers) - 1)) atomicAdd(&s.count[digit], uint32_t(__popc(peers)));
      }
    }
    __syncthreads();
    if (threadIdx.x < 32) {  // one warp finds the digit: 8 counts a lane, a prefix sum over lanes
      uint32_t c[8], sum = 0;
      for (int q = 0; q < 8; ++q) sum += c[q] = s.count[lane * 8 + q];
      uint32_t upto = sum;
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t t = __shfl_up_sync(0xffffffffu, upto, o);
        if (lane >= uint32_t(o)) upto += t;
      }
      uint32_t before = upto - sum;
      if (rank >= before && rank < upto) {
        for (int q = 0; q < 8; before += c[q], ++q) {
          if (rank < before + c[q]) {
            s.digit = lane * 8 + q;
            s.rank = rank - before;
            break;
          }
        }
      }
    }
    __syncthreads();
    prefix |= s.digit << shift;
    mask |= 255u << shift;
    rank = s.rank;
  }
  __syncthreads();  // s is reused at once
  return prefix;
}

// numpy's median of |v[0, count)|, count <= kSelectPerThread * kThreads, in a block of kThreads:
// the middle value, or for an even count the mean of the two middle ones (the lower is the upper
// itself, or the largest value below it). Every thread gets it; ends synchronised.
__device__ float block_median_abs(const float* v, uint32_t count, BlockSelect& s) {
  const HeldValues h = hold_abs(v, count);
  const uint32_t mid = count / 2;
  const uint32_t upper = block_select_abs(h, mid, s);
  if (count % 2) return __uint_as_float(upper);
  if (threadIdx.x == 0) s.less = s.max_less = 0;
  __syncthreads();
  uint32_t less = 0, max_less = 0;
#pragma unroll
  for (int k = 0; k < kSelectPerThread; ++k) {
    const uint32_t b = h.b[k];
    if (b < upper) {  // kNoValue never is
      ++less;
      max_less = max(max_less, b);
    }
  }
  if (less) {
    atomicAdd(&s.less, less);
    atomicMax(&s.max_less, max_less);
  }
  __syncthreads();
  const uint32_t lower = s.less >= mid ? s.max_less : upper;
  __syncthreads();
  return 0.5f * (__uint_as_float(lower) + __uint_as_float(upper));
}

// kLen: 16 for 16-tap wavelets (db8, sym8: the DWT's taps unrolled, every level's regions with
// periodic halos: LevelLayout), else 0 (any length, tight layout). The window's levels alternate
// between two buffers of shared memory (analyse_levels_alternating): 32.2 KiB for S1's
// 4096-sample windows, where a third buffer for the coefficients took 48 and let four blocks share
// a multiprocessor instead of six. The launch bound keeps the registers within six blocks too (40
// a thread; 44 with the select's held values left to the compiler: five blocks).
template <int kLen>
__global__ void __launch_bounds__(kThreads, 6) denoise_windows_kernel(DenoiseWindowsParams p) {
  constexpr bool kHalo = kLen == 16;
  using Layout = LevelLayout<kHalo>;
  extern __shared__ float smem[];
  const uint32_t n = p.n, j = blockIdx.x, lane = blockIdx.y;
  float* const x = smem;
  float* const c = smem + Layout::buffer_floats(n);
  __shared__ BlockSelect select;
  const float* hist = p.hist + size_t(lane) * n;
  const float* in = p.in + size_t(lane) * p.in_stride;
  const size_t start = size_t(p.first_end) + size_t(j) * p.hop;  // in the line: hist, then the chunk
  float* const samples = Layout::approx(x);
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const size_t at = start + i;
    store_periodic<Layout::kApproxHalo>(samples, n, i, at < n ? hist[at] : in[at - n]);
  }
  __syncthreads();
  analyse_levels_alternating<kLen, kHalo>(p.filters, x, c, n, p.levels);
  // Level k's details (1 = finest): Layout::details(k odd ? c : x, n >> k).
  const float sigma_finest = block_median_abs(Layout::details(c, n / 2), n / 2, select) / 0.6745f;
  for (unsigned level = 1; level <= p.levels; ++level) {
    const uint32_t len = n >> level;
    float* d = Layout::details(level & 1 ? c : x, len);
    // Per level: each level's median before its own details change; the levels do not overlap.
    const float sigma = p.per_level && level > 1 ? block_median_abs(d, len, select) / 0.6745f : sigma_finest;
    const float thr = float(double(sigma) * p.universal);
    // The halo copies too: the same threshold of the same value keeps them copies.
    constexpr int h = Layout::kDetailHalo;
    for (int i = int(threadIdx.x) - h; i < int(len) + h; i += int(blockDim.x)) {
      const float v = d[i];
      if (p.soft) {
        const float mag = fabsf(v) - thr;
        d[i] = mag > 0.0f ? copysignf(mag, v) : 0.0f;
      } else if (fabsf(v) < thr) {
        d[i] = 0.0f;  // pywt keeps |x| >= threshold
      }
    }
  }
  __syncthreads();
  synthesise_levels_alternating<kLen, kHalo>(p.filters, x, c, n >> p.levels, p.levels);
  float* out = p.wout + (size_t(lane) * p.windows + j) * n;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = __fmul_rn(p.weight[i], samples[i]);
}

// The hop finished by window w of this chunk, at phase f: the earlier half plus w's first half
// (added in this order, as the CPU twin's overlap-add does).
__device__ __forceinline__ float finished(const float* wout, const float* pending, uint32_t lane, uint32_t windows,
                                          uint32_t n, uint32_t hop, uint32_t w, uint32_t f) {
  const float* base = wout + size_t(lane) * windows * n;
  const float earlier = w == 0 ? pending[size_t(lane) * hop + f] : base[size_t(w - 1) * n + hop + f];
  return __fadd_rn(earlier, base[size_t(w) * n + f]);
}

__global__ void denoise_emit_kernel(const float* __restrict__ wout, const float* __restrict__ ready,
                                    const float* __restrict__ pending, uint32_t windows, uint32_t n, uint32_t hop,
                                    uint32_t fill, uint32_t frames, float* __restrict__ out, size_t out_stride) {
  const uint32_t lane = blockIdx.y;
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < frames; t += gridDim.x * blockDim.x) {
    const uint32_t done = (fill + t) / hop, f = (fill + t) % hop;
    out[size_t(lane) * out_stride + t] =
        done == 0 ? ready[size_t(lane) * hop + f] : finished(wout, pending, lane, windows, n, hop, done - 1, f);
  }
}

__global__ void denoise_advance_kernel(const float* __restrict__ wout, float* ready, float* pending,
                                       const float* __restrict__ hist, const float* __restrict__ in, size_t in_stride,
                                       uint32_t windows, uint32_t n, uint32_t hop, uint32_t frames,
                                       float* __restrict__ hist_next) {
  const uint32_t lane = blockIdx.y;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    // The line's last n samples: line[frames + i].
    const size_t at = size_t(frames) + i;
    hist_next[size_t(lane) * n + i] = at < n ? hist[size_t(lane) * n + at] : in[size_t(lane) * in_stride + (at - n)];
    if (windows > 0 && i < hop) {
      // The same thread reads pending[i] (for window 0) before it overwrites it.
      const float r = finished(wout, pending, lane, windows, n, hop, windows - 1, i);
      pending[size_t(lane) * hop + i] = wout[(size_t(lane) * windows + windows - 1) * n + hop + i];
      ready[size_t(lane) * hop + i] = r;
    }
  }
}

}  // namespace

cudaError_t prepare_denoise_windows(uint32_t n) noexcept {
  if (n < 4 || n > kStreamingDenoiseMaxWindow) return cudaErrorInvalidValue;
  const cudaError_t e = cudaFuncSetAttribute(denoise_windows_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(window_shared_bytes<0>(kStreamingDenoiseMaxWindow)));
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(denoise_windows_kernel<16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(window_shared_bytes<16>(kStreamingDenoiseMaxWindow)));
}

cudaError_t launch_denoise_windows(const DenoiseWindowsParams& p, cudaStream_t stream) noexcept {
  if (p.n < 4 || p.n > kStreamingDenoiseMaxWindow || p.levels < 1 || p.lanes == 0 || p.lanes > 65535)
    return cudaErrorInvalidValue;
  if (p.windows == 0) return cudaSuccess;
  if (haloed(p))
    denoise_windows_kernel<16><<<dim3(p.windows, p.lanes), kThreads, window_shared_bytes<16>(p.n), stream>>>(p);
  else
    denoise_windows_kernel<0><<<dim3(p.windows, p.lanes), kThreads, window_shared_bytes<0>(p.n), stream>>>(p);
  return after_launch(stream);
}

cudaError_t launch_denoise_emit(const float* d_wout, const float* d_ready, const float* d_pending, uint32_t lanes,
                                uint32_t windows, uint32_t n, uint32_t hop, uint32_t fill, uint32_t frames,
                                float* d_out, size_t out_stride, cudaStream_t stream) noexcept {
  if (lanes == 0 || lanes > 65535 || hop == 0) return cudaErrorInvalidValue;
  if (frames == 0) return cudaSuccess;
  denoise_emit_kernel<<<dim3(grid_for(frames), lanes), kThreads, 0, stream>>>(d_wout, d_ready, d_pending, windows, n,
                                                                             hop, fill, frames, d_out, out_stride);
  return after_launch(stream);
}

cudaError_t launch_denoise_advance(const float* d_wout, float* d_ready, float* d_pending, const float* d_hist,
                                   const float* d_in, size_t in_stride, uint32_t lanes, uint32_t windows, uint32_t n,
                                   uint32_t hop, uint32_t frames, float* d_hist_next, cudaStream_t stream) noexcept {
  if (lanes == 0 || lanes > 65535 || hop == 0) return cudaErrorInvalidValue;
  denoise_advance_kernel<<<dim3(grid_for(n), lanes), kThreads, 0, stream>>>(d_wout, d_ready, d_pending, d_hist, d_in,
                                                                           in_stride, windows, n, hop, frames, d_hist_next);
  return after_launch(stream);
}

}  // namespace vigil::cuda
