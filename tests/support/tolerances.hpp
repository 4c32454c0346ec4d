// Every numeric tolerance the tests use, in one table, with the reason for each.
#pragma once

namespace vigil::test {

// FIR design against scipy.signal.firwin (float64 both sides): issue 3's bar.
constexpr double kFirDesignAbs = 1e-6;
// float32 FIR output against scipy lfilter (float64): |err| <= k * max(1, max|ref|)
// (shared/reference/README measures 6.2e-7 for float32 lfilter).
constexpr double kFirOutputRel = 1e-5;
// Streaming in random chunk sizes against one call: same arithmetic, same order: exact.
constexpr double kStreamingAbs = 0.0;
// CUDA convert against the CPU convert: one float multiply each side: bit-identical.
constexpr double kConvertCudaAbs = 0.0;

// A float32 CUDA path against its CPU twin, relative L2 over the whole output (DESIGN's bound):
// the GPU's FFT and FMA round differently, never by more.
constexpr double kGpuVsCpuRelL2 = 1e-5;
// Sample by sample where a CUDA stage hands over to its CPU twin or crossfades a reload: the
// twin's float32 rounding of the same overlap-add, at signal amplitudes of order 1.
constexpr double kHandOverSampleAbs = 1e-4;
// Against a SciPy or PyWavelets reference (float64 there, float32 here), each value, relative to
// the largest |reference| (shared/reference/README: float32 lfilter is 6.2e-7 of it).
constexpr double kReferenceRelMax = 1e-5;
// Sums in double taken in another order or grouping (window moments merged, levels, band RMS):
// relative to the sum's own size.
constexpr double kDoubleSumRel = 1e-12;
// Moments of runs merged by Pebay's formulas against the whole window at once (each sum's scale).
constexpr double kMergedMomentsRel = 1e-9;

}  // namespace vigil::test
