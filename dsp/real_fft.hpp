// RealFft: a forward/inverse real FFT pair of one size on FFTW3 single precision; spectra are
// interleaved complex (re, im) pairs, n/2 + 1 of them (FFTW's r2c layout, measured faster than
// its split-array plans). Planning happens in the constructor (FFTW's planner is not thread-safe:
// serialised here by a global mutex); forward()/inverse() are RT-safe on any thread.
//
// The n reals are transformed as n/2 complex values (even samples real, odd imaginary) by FFTW's
// complex FFT of n/2, and a vectorised pass here splits that into the real signal's spectrum (and
// merges it back for the inverse). FFTW's own r2c/c2r plans end in a scalar radix-2 pass of the
// same kind (Debian's FFTW 3.3.10): against them this is 1.2-2.4x as fast in most pairings of
// bench/real_fft_bench (512 to 65536 points, estimated and measured plans), and within noise of
// them in the rest (bench/results/LOG.md §11, sixth session of 27 Nov). An FFTW built with
// AVX2 and AVX-512 codelets (scripts/build-fftw.sh) has vectorised r2c/c2r plans: there the two
// forms run alike (third session of 28 Nov).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace vigil {

// fftwf_malloc'ed float array (SIMD-aligned), freed with fftwf_free.
struct FftwFree {
  void operator()(float* p) const noexcept;
};
using FftwBuffer = std::unique_ptr<float[], FftwFree>;
FftwBuffer make_fftw_buffer(size_t floats);  // zero-filled; throws std::bad_alloc

// How FFTW plans: kEstimate at once from heuristics; kMeasure by timing candidates (~1 s for a
// 16384-point pair here); kPatient by timing many more (~7 s for that pair, ~15-30 % faster
// transforms measured on the 2-core CI machine). Wisdom (below) makes a repeated plan instant.
enum class FftPlanning { kEstimate, kMeasure, kPatient };

// FFTW wisdom: the plans FFTW chose, kept in a file so a restart plans at once (and the same
// way). Both serialise with the planner. import: false with `why` set when the file is missing or
// not wisdom (nothing changes then); export: writes a temporary file beside `path` and renames it
// over, so a reader never sees half a file; false with `why` on failure.
bool fft_import_wisdom(const std::string& path, std::string& why);
bool fft_export_wisdom(const std::string& path, std::string& why);
// The FFT library linked, with the SIMD kinds it was built with (FFTW: "fftw-3.3.10-sse2-avx";
// scripts/build-fftw.sh's adds avx2 and avx512).
const char* fft_library_version() noexcept;

class RealFft {
 public:
  // n: 2..2^24, even. Throws std::invalid_argument / std::runtime_error (plan failure).
  explicit RealFft(size_t n, FftPlanning planning = FftPlanning::kEstimate);
  ~RealFft();
  RealFft(const RealFft&) = delete;
  RealFft& operator=(const RealFft&) = delete;

  size_t size() const noexcept { return n_; }
  size_t bins() const noexcept { return n_ / 2 + 1; }

  // in: n reals; spectrum: 2 * bins() floats. Pointers from make_fftw_buffer, or offsets into one
  // that are multiples of 16 floats (FFTW requires the planned alignment).
  void forward(const float* in, float* spectrum) const noexcept;
  // Unnormalised inverse (out = n * x). The spectrum is overwritten (FFTW c2r destroys its input).
  void inverse(float* spectrum, float* out) const noexcept;

  // The same transforms with the spectrum in split arrays, re[0..n/2] and im[0..n/2] (any float
  // alignment), as a caller that multiplies spectra keeps them: no interleaving pass on either
  // side. scratch: 2 * bins() floats aligned as `spectrum` above, overwritten; re and im are
  // left as they were by inverse_split.
  void forward_split(const float* in, float* scratch, float* re, float* im) const noexcept;
  void inverse_split(const float* re, const float* im, float* scratch, float* out) const noexcept;
  // inverse_split of sum + x h, the complex products taken bin by bin in the same pass (the last
  // partition of a partitioned convolution: its products are never stored). sum_re, sum_im: both
  // null for x h alone. All split arrays of bins() floats.
  void inverse_of_product(const float* x_re, const float* x_im, const float* h_re, const float* h_im,
                          const float* sum_re, const float* sum_im, float* scratch, float* out) const noexcept;

 private:
  size_t n_;
  void* forward_plan_ = nullptr;  // complex, n/2 points, forward
  void* inverse_plan_ = nullptr;  // complex, n/2 points, backward
  std::vector<float> twiddle_re_, twiddle_im_;  // exp(-2 pi i k / n), k = 0..n/4
};

}  // namespace vigil
