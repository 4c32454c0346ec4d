// Per-lane statistics of one chunk on the GPU, the twin of dsp/vibration_stats(): RMS, peak |x|,
// peak-to-peak, crest factor and kurtosis of each lane's n samples, summed in double in the same
// two passes as the CPU (mean first, then the central moments), so only these few numbers per
// lane cross to the host. One block per lane.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace vigil::cuda {

struct LaneStats {
  double rms, peak, peak_to_peak, crest_factor, kurtosis;
};

// out[l] = the statistics of x[l * stride .. l * stride + n) for l < lanes; n >= 1.
cudaError_t launch_lane_stats(const float* d_x, size_t stride, uint32_t n, uint32_t lanes, LaneStats* d_out,
                              cudaStream_t stream) noexcept;

}  // namespace vigil::cuda
