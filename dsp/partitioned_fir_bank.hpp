// PartitionedFirBank: N band filters over C channels by partitioned overlap-save. Every filter is
// cut into P partitions of L taps; input arrives in blocks of B samples; each block's spectrum
// (FFT size N >= L + B - 1) enters a frequency-domain delay line, and band b's output block is
// IFFT(sum_p X[k - p] * H_b[p]). One forward FFT per channel per block serves every band.
//
// Two layouts (see the factories):
//   uniform(B):      L = B, N = 2B: latency B whatever the filter length (UPOLS).
//   single_block(N): P = 1, L = longest filter, B = N - L + 1: the most samples per FFT, for
//                    throughput when a latency of B is acceptable.
//
// Output: y_b[n - B], where y_b = lfilter(h_b, 1, x): the filtered stream delayed by one block.
// Chunks may be any size: input collects into blocks internally.
// Taps can be replaced while running: set_taps() prepares the new spectra (allocates: not RT);
// each channel swaps at its next block boundary with a linear crossfade over that block, computed
// from the same input spectra, so the output stays between the old and new filters' outputs.
//
// Block phases: kAligned runs every channel's block at the same sample, so one chunk in B/chunk
// carries all the FFT work and the others none. kStaggered spreads the channels over G =
// min(C, B / 32) phase groups, group g's blocks ending g * B / G samples later (as if that many
// zeros had preceded the stream), so each chunk carries about its share: same output (y_b[n - B];
// only the FFTs' rounding differs), even per-chunk cost — what keeps a deadline per chunk at
// high rates. The CUDA twin and its CPU fallback run aligned. `phase` shifts every boundary a
// further `phase` samples later the same way (levels of a NonUniformFirBank use it so that their
// big blocks fall in different chunks).
//
// Deferred blocks (defer > 0): each block's output is sent `defer` samples (1..B) later than
// above, so the block's work (forward FFT, spectral sums, inverse FFTs) may finish up to `defer`
// samples after its last input arrived. A BlockWorker, if given, runs that work on its thread
// while process() goes on; without one it runs in process() as usual. Output: y_b[n - B - defer].
// A NonUniformFirBank defers its larger levels this way, their stretches starting `defer` zeros
// earlier so that the sum keeps its latency. The input window and the output block are double
// buffered: process() fills one while the worker reads the other.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dsp/real_fft.hpp"

namespace vigil {

class BlockWorker;

struct PartitionLayout {
  uint32_t block = 0;      // B: samples per block (latency), >= 1
  uint32_t partition = 0;  // L: taps per partition; must equal B when the filter needs > 1
  uint32_t fft_size = 0;   // N: a power of two >= L + B - 1, 32..2^22
};

enum class BlockPhases { kAligned, kStaggered };

// kStore writes the bands' output; kAdd adds it to what is there (levels of a NonUniformFirBank).
enum class OutputMode { kStore, kAdd };

class PartitionedFirBank {
 public:
  // band_taps: 1..256 bands of 1..2^20 taps (lengths may differ); channels: 1..4096.
  // Throws std::invalid_argument naming the parameter and its range.
  // defer: 0..block (see the header); worker: runs the deferred blocks (must outlive the bank).
  PartitionedFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels, PartitionLayout layout,
                     FftPlanning planning = FftPlanning::kEstimate, BlockPhases phases = BlockPhases::kAligned,
                     uint32_t phase = 0, uint32_t defer = 0, BlockWorker* worker = nullptr);
  ~PartitionedFirBank();  // waits for the worker's jobs of this bank
  PartitionedFirBank(const PartitionedFirBank&) = delete;
  PartitionedFirBank& operator=(const PartitionedFirBank&) = delete;

  // Uniform partitions of B taps (B a power of two, 16..65536): latency B.
  static PartitionLayout uniform(uint32_t block);
  // The largest uniform block within a latency of max_frames: a power of two, 16..65536.
  static uint32_t uniform_block_within(uint32_t max_frames) noexcept;
  // One partition holding the longest filter, FFT size N (a power of two > max_taps): latency
  // N - max_taps + 1.
  static PartitionLayout single_block(size_t max_taps, uint32_t fft_size);
  // The single-block FFT size with the least modelled work per sample (N log2 N / (N - M + 1)),
  // bounded so that the block stays <= max_block samples; 0 when no single block fits (use
  // uniform partitions then).
  static uint32_t best_fft_size(size_t max_taps, uint32_t max_block = 1u << 16);

  // in: channel c at in + c * in_stride; out: band b, channel c at out + b * band_stride + c * out_stride
  // (band_stride 0: channels * out_stride). RT-safe: no allocation.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride,
               size_t band_stride = 0, OutputMode mode = OutputMode::kStore) noexcept;

  // New taps' spectra, prepared by stage_taps() and taken by commit_taps(): a reload in two steps,
  // so that a bank made of several of these (levels, a part per thread) switches all or none.
  struct StagedTaps {
    FftwBuffer data;              // [band][partition]: split complex, stride_ real parts then stride_ imaginary
    std::vector<uint32_t> parts;  // partitions used per band
  };
  // Checks and transforms new taps (same band count, each at most partitions() x partition()
  // taps); nothing changes yet. Not RT-safe (allocates). Throws std::invalid_argument,
  // std::bad_alloc.
  StagedTaps stage_taps(const std::vector<std::vector<float>>& band_taps) const;
  // Each channel's crossfade to them starts at its next block boundary; taps committed while
  // channels are still crossing over to earlier ones follow once all have (the latest wins). With
  // a worker: waits for its blocks first. staged: from this bank's stage_taps(), used once.
  void commit_taps(StagedTaps&& staged) noexcept;
  // Both steps.
  void set_taps(const std::vector<std::vector<float>>& band_taps) { commit_taps(stage_taps(band_taps)); }
  // From the thread that calls process(); with a worker, waits for its blocks first.
  bool crossfade_pending() const noexcept;

  void reset() noexcept;  // with a worker: waits for its blocks first

  uint32_t bands() const noexcept { return bands_; }
  uint32_t channels() const noexcept { return channels_; }
  uint32_t block() const noexcept { return layout_.block; }
  uint32_t partition() const noexcept { return layout_.partition; }
  uint32_t partitions() const noexcept { return parts_; }
  uint32_t fft_size() const noexcept { return layout_.fft_size; }
  uint32_t latency_frames() const noexcept { return layout_.block + defer_; }
  uint32_t defer() const noexcept { return defer_; }
  BlockPhases phases() const noexcept { return phases_; }
  // Blocks run, counted per channel (with a worker: those it has finished).
  uint64_t channel_blocks() const noexcept { return channel_blocks_.load(std::memory_order_relaxed); }

 private:
  using Spectra = StagedTaps;  // the running taps too
  struct Channel {
    uint32_t fill = 0;          // samples of its current block received so far
    uint32_t fdl_pos = 0;       // slot of its newest block in its delay line
    bool switch_due = false;    // crossfades to next_taps_ at its next block
    bool on_next = false;       // crossed over: filters with next_taps_ until all have
    uint32_t window = 0;        // deferred: the input window (and output block) being filled, 0 or 1
    uint32_t ticket = 0;        // deferred, with a worker: the job of its last block
    bool queued = false;        // ... which was submitted
  };
  Spectra make_spectra(const std::vector<std::vector<float>>& band_taps) const;
  // The block in input window `window` of `channel`: its spectrum, its bands' output into output
  // block `window`, and the next window's overlap (deferred) or the window slid (not deferred).
  void run_block(uint32_t channel, uint32_t window) noexcept;
  static void run_queued_block(void* bank, uint32_t arg) noexcept;  // a BlockWorker job
  void wait_for_block(Channel& ch) const noexcept;
  void drain() const noexcept;
  float* window_of(uint32_t channel, uint32_t window) const noexcept {
    return time_.get() + (size_t(channel) * (defer_ ? 2 : 1) + window) * layout_.fft_size;
  }
  float* output_of(uint32_t band, uint32_t channel, uint32_t window) const noexcept {
    return out_.get() + ((size_t(band) * channels_ + channel) * (defer_ ? 2 : 1) + window) * layout_.block;
  }
  // Band `band` of `channel`'s block: the inverse FFT (N samples, out) of its spectrum summed over
  // its partitions (acc_ holds the partial sums).
  void filter_band(const Spectra& h, uint32_t band, uint32_t channel, float* out) noexcept;
  void start_switch() noexcept;
  uint32_t initial_fill(uint32_t channel) const noexcept;

  uint32_t bands_, channels_;
  PartitionLayout layout_;
  BlockPhases phases_;
  uint32_t phase_;
  uint32_t defer_;
  BlockWorker* worker_;
  uint32_t parts_ = 0;
  size_t bins_, stride_;        // stride_: bins_ rounded up to 16 floats (SIMD alignment of split arrays)
  size_t spectrum_floats_;      // an interleaved spectrum: 2 * bins_ rounded up to 16 floats (FFTW alignment)
  RealFft fft_;
  Spectra taps_, next_taps_, queued_;
  uint32_t switches_left_ = 0;  // channels yet to cross over to next_taps_
  FftwBuffer time_;             // per channel: the last N input samples (block at the end); deferred: two
  FftwBuffer fdl_;              // per channel: parts_ input spectra (ring), each split: re[stride_], im[stride_]
  std::vector<Channel> state_;
  FftwBuffer acc_;              // split partial sums (2 * stride_)
  FftwBuffer scratch_;          // the FFTs' interleaved scratch (spectrum_floats_)
  FftwBuffer ifft_out_;         // two of N samples: the current taps' inverse, and the next's during a crossfade
  FftwBuffer out_;              // per lane: B output samples ready from the last block; deferred: two
  std::atomic<uint64_t> channel_blocks_{0};
};

}  // namespace vigil
