// Kernels of WaveletDenoiserCuda: the periodized DWT and its inverse (as dsp/Dwt), an exact
// on-device selection of the median |coefficient| (MSD radix select over the float bit pattern,
// no host round trip), the VisuShrink threshold derived on the device, and the thresholding.
// Coefficients in pywt order [cA_J, cD_J, ..., cD_1].
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

constexpr int kMaxWaveletTaps = 40;  // db20, sym20
// Input lengths up to this run their remaining levels in one block, in shared memory.
constexpr uint32_t kFusedLevelsMax = 4096;

struct WaveletFilters {  // passed by value: each launch carries its own (no shared constant state)
  float lo[kMaxWaveletTaps];
  float hi[kMaxWaveletTaps];
  int len;
};

// One analysis level: a (m samples) -> ca = coeffs-to-be at [0, m/2), cd at [m/2, m).
cudaError_t launch_dwt_analyse(const WaveletFilters& f, const float* d_a, uint32_t m, float* d_ca, float* d_cd,
                               cudaStream_t stream) noexcept;
// Every remaining analysis level from input length m (<= kFusedLevelsMax) down to m >> levels,
// in one block: detail j of the remaining ones goes to coeffs + (m >> j), the last approximation
// to coeffs[0, m >> levels).
cudaError_t launch_dwt_analyse_fused(const WaveletFilters& f, const float* d_a, uint32_t m, unsigned levels,
                                     float* d_coeffs, cudaStream_t stream) noexcept;
// One synthesis level: ca and cd (m/2 each) -> a (m samples).
cudaError_t launch_dwt_synthesise(const WaveletFilters& f, const float* d_ca, const float* d_cd, uint32_t m,
                                  float* d_a, cudaStream_t stream) noexcept;
// The deepest `levels` synthesis levels in one block: from coeffs[0, m0) (m0 = the approximation's
// length) with the details at coeffs + (m0 << i), to out (m0 << levels <= kFusedLevelsMax samples).
cudaError_t launch_dwt_synthesise_fused(const WaveletFilters& f, const float* d_coeffs, uint32_t m0, unsigned levels,
                                        float* d_out, cudaStream_t stream) noexcept;

// Selection state for one median: the k-th smallest |v| is found 11 + 11 + 10 bits at a time.
struct SelectState {
  uint32_t prefix;  // the bits found so far
  uint32_t rank;    // the rank still sought among values with that prefix
};
constexpr int kSelectBins = 2048;

// Starts two selections: state[0] seeks rank r0, state[1] rank r1 (0-based, ascending |v|).
cudaError_t launch_select_init(SelectState* d_state, uint32_t r0, uint32_t r1, cudaStream_t stream) noexcept;
// One pass for both states: histograms of bits [shift, shift + bits) of |v| among the values whose
// higher bits equal each state's prefix, then the bin holding each rank appended to its prefix.
// d_hist: 2 * kSelectBins. Three passes (shift 21/11/0, bits 11/11/11... see the class) finish.
cudaError_t launch_select_pass(const float* d_v, size_t n, int shift, int bits, SelectState* d_state,
                               uint32_t* d_hist, cudaStream_t stream) noexcept;
// thr[0 .. count) = float(double(sigma) * universal), sigma = median / 0.6745f, the median from
// the two finished selections: state[0] rank n/2 - 1 and state[1] rank n/2 of n values, or
// state[1] alone for odd n (as numpy.median, in float as the CPU twin).
cudaError_t launch_threshold_from_median(const SelectState* d_state, bool odd, double universal, float* d_thr,
                                         unsigned count, cudaStream_t stream) noexcept;
// Soft or hard thresholding of coeffs[n >> levels, n): level j (1 = finest) uses thr[j - 1].
cudaError_t launch_threshold(float* d_coeffs, uint32_t n, unsigned levels, const float* d_thr, bool soft,
                             cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
