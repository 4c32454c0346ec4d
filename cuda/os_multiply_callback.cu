// The forward transform's store callback of OverlapSaveCuda, compiled on its own to LTO-IR
// (cuda/CMakeLists.txt) and handed to cuFFT, which links it into its own kernels when the plan is
// made (cufftXtSetJITCallback, CUDA 13). Each spectrum bin is multiplied by every band's tap
// spectrum as cuFFT stores it: the separate multiply pass, which read the spectra back and wrote
// the products (an eighth of the call at 8 192 taps), is gone. The product is the one
// launch_os_multiply computes: y = x h, complex, in float.
#include <cufftXt.h>

#include "cuda/os_multiply_callback.cuh"

// C++ linkage: cuFFT finds the callback by its C++ name (an extern "C" one fails planning with
// CUFFT_INTERNAL_ERROR: H100, CUDA 13.0, 2026-12-06).
__device__ void vigil_os_multiply_store(void* products, unsigned long long offset, cufftComplex x,
                                        void* caller_info, void* /*shared*/) {
  const auto* info = static_cast<const vigil::cuda::OsMultiplyInfo*>(caller_info);
  const unsigned int k = unsigned(offset % info->bins);  // offset = spectrum * bins + k
  float2* y = static_cast<float2*>(products) + offset;
  for (unsigned int b = 0; b < info->bands; ++b) {
    const float2 h = info->taps[size_t(b) * info->bins + k];
    y[b * info->band_stride] = make_float2(x.x * h.x - x.y * h.y, x.x * h.y + x.y * h.x);
  }
}
