// What OverlapSaveCuda's forward transform hands its store callback (cuda/os_multiply_callback.cu):
// the taps' spectra, and where each band's products go. One copy lives in device memory per plan.
#pragma once

#include <vector_types.h>

namespace vigil::cuda {

struct OsMultiplyInfo {
  const float2* taps;                // [bands][bins], pre-scaled by 1/N
  unsigned long long band_stride;    // elements from one band's products to the next (capacity x bins)
  unsigned int bands;
  unsigned int bins;                 // N/2 + 1
};

}  // namespace vigil::cuda
