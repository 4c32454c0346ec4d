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

// A closed form in double (a window's coefficients, a tap's mirror image), values of order 1:
// a few ulps.
constexpr double kDoubleUlpsAbs = 1e-15;
// A double result against the same quantity by another formula (a filter's gain, a statistic
// from its sums), values of order 1 or relative to the value: rounding of a few hundred terms.
constexpr double kDoubleFormulaRel = 1e-12;
// Through a chain of double formulas with quotients, powers or logarithms (kurtosis m4/m2^2, an
// energy over a hit, a level in dB), relative to the value or at values of order 1.
constexpr double kDoubleChainRel = 1e-9;
// A float32 value, or a statistic of float32 samples taken in double, against its exact value, at
// order 1: float32's rounding (6e-8) with room.
constexpr double kFloatValueAbs = 1e-6;
// A float32 result against its exact value, at signal amplitudes of order 1: a few float32 ulps
// of a sum of many terms (a round trip through the FFT or the DWT, a crossfade's end points, a
// statistic of a float32 signal).
constexpr double kFloatSampleAbs = 1e-5;
// A float32 FFT convolution's sample against the exact value, amplitudes of order 1 (the FFT's
// rounding grows with its size: sizes up to 2^16 here).
constexpr double kFloatFftSampleAbs = 1e-4;
// One value computed on the GPU and on the CPU in float32 by different reductions (a median, a
// threshold), relative to max(1, value).
constexpr double kGpuVsCpuValueRel = 1e-4;

}  // namespace vigil::test
