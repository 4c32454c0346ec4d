// PartitionedFirBank: N band filters over C channels by uniformly partitioned overlap-save
// (UPOLS). Each filter is cut into P partitions of B taps whose spectra (FFT size 2B) multiply a
// frequency-domain delay line of the last P input-block spectra. One forward FFT per channel per
// block serves every band. Cost per sample ~ (FFT + bands x (P CMACs + IFFT)) / B, independent of
// how the taps are laid out; latency exactly B samples whatever the filter length.
//
// Output: y_b[n - B], where y_b = lfilter(h_b, 1, x): the filtered stream delayed by one partition.
// Chunks may be any size (0..max_frames): input collects into blocks of B internally.
// Taps can be replaced while running: set_taps() prepares the new spectra (allocates: not RT);
// the swap happens at the next block boundary with a linear crossfade over that block, computed
// from the same input spectra, so the output stays between the old and new filters' outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dsp/real_fft.hpp"

namespace vigil {

class PartitionedFirBank {
 public:
  // band_taps: 1..256 bands of 1..2^20 taps (lengths may differ); channels: 1..4096;
  // partition: B, a power of two 16..65536. Throws std::invalid_argument naming the range.
  PartitionedFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels, uint32_t partition,
                     FftPlanning planning = FftPlanning::kEstimate);

  // in: channel c at in + c * in_stride; out: band b, channel c at out + (b * channels + c) * out_stride.
  // RT-safe: no allocation.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) noexcept;

  // Stages new taps (same band count; lengths may differ but not exceed the partition count the
  // bank was built with: ceil(len / B) <= partitions()). Not RT-safe (computes spectra). The
  // crossfade starts at the next block boundary. Throws std::invalid_argument.
  void set_taps(const std::vector<std::vector<float>>& band_taps);
  bool crossfade_pending() const noexcept { return pending_; }

  void reset() noexcept;

  uint32_t bands() const noexcept { return bands_; }
  uint32_t channels() const noexcept { return channels_; }
  uint32_t partition() const noexcept { return block_; }
  uint32_t partitions() const noexcept { return parts_; }
  uint32_t latency_frames() const noexcept { return block_; }

 private:
  // Spectra of every band's partitions: [band][partition] x stride_ floats, real and imag.
  struct Spectra {
    FftwBuffer re, im;
    std::vector<uint32_t> parts;  // partitions actually used per band
  };
  Spectra make_spectra(const std::vector<std::vector<float>>& band_taps) const;
  void run_block() noexcept;
  void accumulate(const Spectra& h, uint32_t band, uint32_t channel) noexcept;

  uint32_t bands_, channels_, block_, parts_;
  size_t bins_, stride_;      // stride_: bins_ rounded up to 16 floats (keeps FFTW alignment)
  RealFft fft_;
  Spectra taps_, next_taps_;
  bool pending_ = false;
  FftwBuffer time_;           // per channel: 2B samples [previous block | current block]
  FftwBuffer fdl_re_, fdl_im_;  // per channel: parts_ slots of input spectra (ring)
  uint32_t fdl_pos_ = 0;      // slot of the newest block
  FftwBuffer acc_re_, acc_im_, ifft_out_;
  FftwBuffer out_;            // per lane: B output samples ready from the last block
  uint32_t fill_ = 0;         // samples of the current block received so far
};

}  // namespace vigil
