// StreamingFirBank: the FIR bank the pipeline uses. Picks the fastest form whose latency fits:
//   - direct form (zero latency) up to kDirectMaxTaps taps: measured faster than any FFT form
//     there (bench/fir_bench, docs/PERFORMANCE.md), or whenever FirForm::kDirect asks for it;
//   - one FFT block of the size with least work per sample, when its block fits max_latency;
//   - otherwise partitions of the largest power-of-two block D <= max_latency (>= 16): uniform
//     (all of D) or non-uniform (D first, larger ones later: NonUniformFirBank::plan), whichever
//     the work model finds cheaper; the latency is D either way.
// Output equals lfilter(h, 1, x) delayed by latency_frames(). The FFT forms stagger their channels'
// block phases (PartitionedFirBank), so every chunk carries about the same share of the work, and
// with a WorkerPool split the channels into one bank per thread, run in parallel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dsp/fir_bank.hpp"
#include "dsp/fir_form.hpp"
#include "dsp/nonuniform_fir_bank.hpp"
#include "dsp/worker_pool.hpp"

namespace vigil {

class StreamingFirBank {
 public:
  static constexpr size_t kDirectMaxTaps = 48;

  enum class Form { kDirect, kSingleBlock, kUniform, kNonUniform };

  // band_taps, channels: as FirBank. max_frames: the largest chunk process() gets.
  // max_latency_frames: the most delay the caller accepts (>= 16 unless taps <= kDirectMaxTaps).
  // pool: when it has more than one thread, the FFT forms split the channels over it (the pool
  // must outlive this bank; process() is then one pool run). form: kDirect or kFft overrides the
  // choice between the direct form and the FFT forms (kAuto: by kDirectMaxTaps).
  StreamingFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels, uint32_t max_frames,
                   uint32_t max_latency_frames, FftPlanning planning = FftPlanning::kEstimate,
                   WorkerPool* pool = nullptr, FirForm form = FirForm::kAuto);

  // RT-safe.
  void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) noexcept;
  // Not RT-safe; crossfades over one block (direct form: over crossfade_frames).
  void set_taps(const std::vector<std::vector<float>>& band_taps, uint32_t crossfade_frames = 256);
  void reset() noexcept;

  Form form() const noexcept { return form_; }
  uint32_t parallel_parts() const noexcept { return direct_ ? 1 : uint32_t(parts_.size()); }
  std::string describe() const;
  uint32_t latency_frames() const noexcept;

 private:
  Form form_;
  std::unique_ptr<FirBank> direct_;
  struct Part {
    uint32_t first_channel;
    std::unique_ptr<NonUniformFirBank> bank;  // one level for the single-block and uniform forms
  };
  std::vector<Part> parts_;  // the FFT forms: one bank per channel range
  WorkerPool* pool_ = nullptr;
  uint32_t channels_ = 0;
};

}  // namespace vigil
