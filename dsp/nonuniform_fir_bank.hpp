// NonUniformFirBank: a FIR bank whose partitions grow with their distance into the filter, so a
// long filter costs far fewer spectral multiply-accumulates at a short latency. Each level is a
// PartitionedFirBank over one stretch of the taps:
//
//   level 0: the first taps, blocks of D (any layout; the latency of the whole bank is D);
//   level k: the taps from offset o_k on, uniform blocks of b_k.
//
// A level of block b outputs its stretch's convolution b samples late; the bank's output is the sum
// of the levels, D samples late, so level k's stretch must begin at o_k >= b_k - D: the samples it
// needs have then arrived one block before they are due. Where o_k is larger, the level's taps are
// preceded by o_k - (b_k - D) zeros to make up the difference. plan() builds levels that meet the
// bound exactly (g - 1 partitions per level, each level g times the last; Garcia's and Gardner's
// schemes): for S3's 4 x 8191 taps at D = 256, 3 x 256, 3 x 1024, 2 x 4096 do the work of about
// six 256-partitions instead of 32.
//
// Every level sums its output into the same place (OutputMode::kAdd after level 0's kStore) and
// carries its blocks `k * D` samples later than level 0's (PartitionedFirBank's phase: the output
// is unchanged), so different levels' big blocks fall in different chunks. Tap swaps crossfade
// each level at its own block boundary: during a swap each level's share lies between its old and
// new stretch's output, and once the largest level's block has passed the output is the new
// filter's.
//
// In the background: a level k may be deferred by d_k samples (its output d_k later, so that a
// BlockWorker thread runs its blocks while the caller goes on); it must then begin at
// o_k >= b_k + d_k - D. plan(..., background) defers every later level by half its block: S3's
// 8191 taps at D = 256 become 5 x 256 on the caller's thread and 7 x 1024 on the worker's, with the
// same latency.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dsp/partitioned_fir_bank.hpp"

namespace vigil {

struct FirLevel {
  PartitionLayout layout;   // level 0: any layout; later levels: uniform (partition == block)
  uint32_t partitions = 0;  // partitions of layout.partition taps this level holds
  uint32_t defer = 0;       // later levels: output this much later (PartitionedFirBank's defer), 0..block
};

class NonUniformFirBank {
 public:
  // band_taps, channels: as PartitionedFirBank; levels: 1..16, blocks increasing, holding every
  // band's taps. Throws std::invalid_argument naming the level and the bound it breaks.
  // worker: runs the deferred levels' blocks (see the header; it must outlive the bank).
  NonUniformFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                    std::vector<FirLevel> levels, FftPlanning planning = FftPlanning::kEstimate,
                    BlockPhases phases = BlockPhases::kAligned, BlockWorker* worker = nullptr);

  // The levels with the least modelled work (work_per_sample) for filters of max_taps at a latency
  // of base_block (a power of two 16..65536): plain uniform partitions when nothing beats them.
  // background: every level after the first deferred by half its block (so a BlockWorker has that
  // long to run it), and the least work for the busier of the two threads chosen.
  static std::vector<FirLevel> plan(size_t max_taps, uint32_t base_block, size_t bands, bool background = false);
  // Modelled work per input sample and channel: each level's FFTs (N log2 N: one forward shared by
  // the bands, one inverse per band) and its spectral multiply-accumulates (kMacWeight per bin).
  static double work_per_sample(const std::vector<FirLevel>& levels, size_t bands);
  // A bin's complex multiply-accumulate against one N log2 N unit of a real FFT: ~12 when the
  // accumulation read 32 bytes a bin two floats at a time (perf on S3's and S2's banks, 2-core
  // Xeon, FFTW 3.3.10); ~7.6 since it reads split arrays vectorised (four level plans of S3's
  // crossover timed on the 2-core EPYC, fitted: bench/results/LOG.md §11). With it S3's 8191 taps
  // at 256 frames plan as 3 x 256, 8 x 1024 (5.2 us a chunk and channel) instead of
  // 3 x 256, 3 x 1024, 2 x 4096 (5.6 us, and a 4096-block's FFTs in every 16th chunk).
  static constexpr double kMacWeight = 7.6;

  // As PartitionedFirBank::process. RT-safe.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride,
               size_t band_stride = 0) noexcept;
  // New taps (same band count, each at most capacity() taps) in two steps, as PartitionedFirBank's:
  // stage_taps() prepares every level's (not RT-safe; throws std::invalid_argument, std::bad_alloc
  // with nothing changed), commit_taps() switches every level to them (staged: from this bank's
  // stage_taps(), used once).
  using StagedTaps = std::vector<PartitionedFirBank::StagedTaps>;
  StagedTaps stage_taps(const std::vector<std::vector<float>>& band_taps) const;
  void commit_taps(StagedTaps&& staged) noexcept;
  void set_taps(const std::vector<std::vector<float>>& band_taps) { commit_taps(stage_taps(band_taps)); }
  bool crossfade_pending() const noexcept;
  void reset() noexcept;

  uint32_t latency_frames() const noexcept { return levels_[0].layout.block; }
  size_t capacity() const noexcept { return capacity_; }
  const std::vector<FirLevel>& levels() const noexcept { return levels_; }
  const PartitionedFirBank& level(size_t k) const noexcept { return *banks_[k]; }
  std::string describe() const;  // "3 x 256, 3 x 1024, 2 x 4096" (partitions x block)

 private:
  // Level k's share of each band: pads_[k] zeros, then the taps from offsets_[k] on that fit.
  std::vector<std::vector<float>> stretch(const std::vector<std::vector<float>>& band_taps, size_t k) const;
  void check_taps(const std::vector<std::vector<float>>& band_taps) const;

  std::vector<FirLevel> levels_;
  std::vector<size_t> offsets_;  // first tap of each level
  std::vector<size_t> pads_;     // zeros ahead of each level's taps
  size_t capacity_ = 0;          // taps the levels hold together
  size_t bands_ = 0;
  uint32_t channels_ = 0;
  std::vector<std::unique_ptr<PartitionedFirBank>> banks_;
};

}  // namespace vigil
