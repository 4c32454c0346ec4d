// StreamingFirBank: the FIR bank the pipeline uses. Picks the fastest form whose latency fits:
//   - direct form (zero latency) up to kDirectMaxTaps taps: measured faster than any FFT form
//     there (bench/fir_bench, docs/PERFORMANCE.md), or whenever FirForm::kDirect asks for it;
//   - one FFT block of the size with least work per sample, when its block fits max_latency;
//   - otherwise partitions of the largest power-of-two block D <= max_latency (>= 16): uniform
//     (all of D) or non-uniform (D first, larger ones later: NonUniformFirBank::plan), whichever
//     the work model finds cheaper; the latency is D either way.
// Output equals lfilter(h, 1, x) delayed by latency_frames(). The FFT forms stagger their channels'
// block phases (PartitionedFirBank), so every chunk carries about the same share of the work, and
// with a WorkerPool split the channels into one bank per thread, run in parallel (or, where that
// split would be just two ways and the channels few, run a non-uniform bank's larger levels
// deferred on a BlockWorker thread: one hand-off per large block, not a pool run per chunk). A complementary
// bank (a crossover: its bands sum to a unit impulse) filters all bands but the last in the FFT
// forms and takes the last as the delayed input minus the others (ComplementaryBand).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/block_worker.hpp"
#include "dsp/complementary_band.hpp"
#include "dsp/fir_bank.hpp"
#include "dsp/fir_form.hpp"
#include "dsp/nonuniform_fir_bank.hpp"
#include "core/worker_pool.hpp"

namespace vigil {

class StreamingFirBank {
 public:
  static constexpr size_t kDirectMaxTaps = 48;
  // Few channels at a short latency, split two ways: the larger levels on a BlockWorker rather than
  // the channels over the pool (S3's bank on two threads, 2 to 16 channels x 256 frames: 1.05-1.3x
  // the split; at 32 channels a tie: bench/results/LOG.md §11).
  static constexpr uint64_t kBackgroundMaxSamples = 4096;

  enum class Form { kDirect, kSingleBlock, kUniform, kNonUniform };

  // band_taps, channels: as FirBank. max_frames: the largest chunk process() gets.
  // max_latency_frames: the most delay the caller accepts (>= 16 unless taps <= kDirectMaxTaps).
  // pool: when it has more than one thread, the FFT forms split the channels over it (the pool
  // must outlive this bank; process() is then one pool run), or, where the channels would split
  // just two ways (two threads, or two channels) and a non-uniform bank has few of them (channels x
  // block <= kBackgroundMaxSamples), run its later levels deferred on a BlockWorker thread of their
  // own (the pool's helpers then sleep). form: kDirect or kFft overrides the
  // choice between the direct form and the FFT forms (kAuto: by kDirectMaxTaps). complementary:
  // the bands sum to a unit impulse (design_crossover's), each tap of the sum within
  // kComplementaryTolerance, else std::invalid_argument; the FFT forms then compute the last band
  // from the others (the output differs from filtering by its own taps only by the taps' rounding).
  StreamingFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels, uint32_t max_frames,
                   uint32_t max_latency_frames, FftPlanning planning = FftPlanning::kEstimate,
                   WorkerPool* pool = nullptr, FirForm form = FirForm::kAuto, bool complementary = false);

  // Float taps of a crossover designed in double sum to the impulse within a few 1e-8.
  static constexpr double kComplementaryTolerance = 1e-6;

  // RT-safe.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) noexcept;
  // Not RT-safe; crossfades over one block (direct form: over crossfade_frames). A complementary
  // bank's new taps must be complementary at the same delay (std::invalid_argument otherwise).
  // Throws std::invalid_argument or std::bad_alloc with every channel still on the taps it had.
  void set_taps(const std::vector<std::vector<float>>& band_taps, uint32_t crossfade_frames = 256);
  void reset() noexcept;

  Form form() const noexcept { return form_; }
  uint32_t parallel_parts() const noexcept { return direct_ ? 1 : uint32_t(parts_.size()); }
  std::string describe() const;
  uint32_t latency_frames() const noexcept;
  // Whether the last band is computed from the others (a complementary bank in an FFT form).
  bool last_band_from_the_rest() const noexcept { return impulse_delay_ >= 0; }

 private:
  // The bands the FFT banks filter: all, or all but the last of a complementary bank.
  std::vector<std::vector<float>> filtered_bands(const std::vector<std::vector<float>>& band_taps) const;

  Form form_;
  std::unique_ptr<FirBank> direct_;
  struct Part {
    uint32_t first_channel;
    std::unique_ptr<NonUniformFirBank> bank;  // one level for the single-block and uniform forms
    std::unique_ptr<ComplementaryBand> last;  // the last band of a complementary bank
  };
  std::unique_ptr<BlockWorker> worker_;  // deferred levels' thread (declared before the banks that use it)
  std::vector<Part> parts_;  // the FFT forms: one bank per channel range
  WorkerPool* pool_ = nullptr;
  uint32_t channels_ = 0;
  uint32_t bands_ = 0;
  long impulse_delay_ = -1;  // D of a complementary bank in an FFT form, else -1
};

}  // namespace vigil
