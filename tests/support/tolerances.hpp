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

}  // namespace vigil::test
