#include "dsp/streaming_fir_bank.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vigil {

StreamingFirBank::StreamingFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                                   uint32_t max_frames, uint32_t max_latency_frames, FftPlanning planning,
                                   WorkerPool* pool, FirForm form, bool complementary)
    : channels_(channels), bands_(uint32_t(band_taps.size())) {
  size_t longest = 0;
  for (const auto& t : band_taps) longest = std::max(longest, t.size());
  const long impulse_delay =
      complementary ? ComplementaryBand::impulse_delay(band_taps, kComplementaryTolerance) : -1;
  if (complementary && impulse_delay < 0)
    throw std::invalid_argument("fir bank: the bands of a complementary bank must sum to a unit impulse (each tap "
                                "within 1e-6), and these do not");
  if (form == FirForm::kDirect || (form == FirForm::kAuto && longest <= kDirectMaxTaps)) {
    form_ = Form::kDirect;
    direct_ = std::make_unique<FirBank>(band_taps, channels, max_frames);
    return;
  }
  if (max_latency_frames < 16)
    throw std::invalid_argument("fir bank: " + std::to_string(longest) + " taps need an FFT form with at least 16 frames "
                                "of latency, but the latency limit is " + std::to_string(max_latency_frames));
  impulse_delay_ = impulse_delay;
  const std::vector<std::vector<float>> filtered = filtered_bands(band_taps);
  const uint32_t block = PartitionedFirBank::uniform_block_within(max_latency_frames);
  std::vector<FirLevel> levels = NonUniformFirBank::plan(longest, block, filtered.size());
  form_ = levels.size() > 1 ? Form::kNonUniform : Form::kUniform;
  // One big FFT only while it beats the partitions of `block`: when the latency limit is barely
  // above the filter length, the single block's hop shrinks to a few samples per FFT (1023 taps
  // under 256 frames: FFT 1024 for every 2 samples, ~200x the work).
  if (const uint32_t n = PartitionedFirBank::best_fft_size(longest, max_latency_frames)) {
    const std::vector<FirLevel> single = {{PartitionedFirBank::single_block(longest, n), 1}};
    if (NonUniformFirBank::work_per_sample(single, filtered.size()) <=
        NonUniformFirBank::work_per_sample(levels, filtered.size())) {
      form_ = Form::kSingleBlock;
      levels = single;
    }
  }
  // Few channels at a short latency, and two threads to share them: a pool run per chunk costs
  // much of the chunk's work (S3 on two cores), so the second thread takes the larger levels'
  // blocks instead, one hand-off per block. Deferred, they need more taps in the first level: only
  // where the plan still has levels. With more threads for the channels the split spreads wider.
  const bool few_channels = uint64_t(channels) * block <= kBackgroundMaxSamples;
  if (form_ == Form::kNonUniform && WorkerPool::parts_for(pool, channels) == 2 && few_channels) {
    std::vector<FirLevel> deferred = NonUniformFirBank::plan(longest, block, filtered.size(), true);
    if (deferred.size() > 1) {
      levels = std::move(deferred);
      worker_ = std::make_unique<BlockWorker>("vigil-levels");
      pool = nullptr;  // one bank for every channel, its later levels on the worker
    }
  }
  // One bank per thread over a contiguous range of channels (each staggers its own).
  const uint32_t parts = WorkerPool::parts_for(pool, channels);
  if (parts > 1) pool_ = pool;
  for (uint32_t i = 0; i < parts; ++i) {
    const WorkerPool::Range r = WorkerPool::range(channels, parts, i);
    Part part{r.first, std::make_unique<NonUniformFirBank>(filtered, r.end - r.first, levels, planning,
                                                           BlockPhases::kStaggered, worker_.get()), nullptr};
    if (impulse_delay_ >= 0)
      part.last = std::make_unique<ComplementaryBand>(r.end - r.first,
                                                      part.bank->latency_frames() + uint32_t(impulse_delay_), max_frames);
    parts_.push_back(std::move(part));
  }
}

std::vector<std::vector<float>> StreamingFirBank::filtered_bands(const std::vector<std::vector<float>>& band_taps) const {
  if (impulse_delay_ < 0) return band_taps;
  return {band_taps.begin(), band_taps.end() - 1};
}

void StreamingFirBank::process(const float* in, size_t in_stride, uint32_t frames, float* out,
                               size_t out_stride) noexcept {
  if (direct_) {
    direct_->process(in, in_stride, frames, out, out_stride);
    return;
  }
  const size_t band_stride = size_t(channels_) * out_stride;
  auto run_part = [&](uint32_t i) {
    const Part& p = parts_[i];
    p.bank->process(in + p.first_channel * in_stride, in_stride, frames, out + p.first_channel * out_stride, out_stride,
                    band_stride);
    if (p.last)
      p.last->process(in + p.first_channel * in_stride, in_stride, frames, out + p.first_channel * out_stride,
                      out_stride, band_stride, bands_ - 1);
  };
  if (pool_)
    pool_->run(uint32_t(parts_.size()), run_part);
  else
    run_part(0);
}

void StreamingFirBank::set_taps(const std::vector<std::vector<float>>& band_taps, uint32_t crossfade_frames) {
  if (direct_) {
    direct_->set_taps(band_taps, crossfade_frames);
    return;
  }
  if (impulse_delay_ >= 0 && ComplementaryBand::impulse_delay(band_taps, kComplementaryTolerance) != impulse_delay_)
    throw std::invalid_argument("fir bank: new taps of a complementary bank must sum to a unit impulse at tap " +
                                std::to_string(impulse_delay_) + " (each tap within 1e-6), and these do not");
  // Every part's spectra first: a failure (memory) leaves all parts on the old taps.
  const std::vector<std::vector<float>> filtered = filtered_bands(band_taps);
  std::vector<NonUniformFirBank::StagedTaps> staged;
  for (const Part& p : parts_) staged.push_back(p.bank->stage_taps(filtered));
  for (size_t i = 0; i < parts_.size(); ++i) parts_[i].bank->commit_taps(std::move(staged[i]));
}

void StreamingFirBank::reset() noexcept {
  if (direct_)
    direct_->reset();
  else
    for (Part& p : parts_) {
      p.bank->reset();
      if (p.last) p.last->reset();
    }
}

uint32_t StreamingFirBank::latency_frames() const noexcept { return direct_ ? 0 : parts_[0].bank->latency_frames(); }

std::string StreamingFirBank::describe() const {
  // What the FFT forms add to their name: the thread split and a complementary bank's last band.
  auto extras = [&] {
    std::string s = parts_.size() > 1 ? ", channels over " + std::to_string(parts_.size()) + " threads" : std::string();
    if (impulse_delay_ >= 0) s += ", last band as the delayed input minus the others";
    return s;
  };
  if (form_ == Form::kDirect) return "direct form";
  const PartitionedFirBank& first = parts_[0].bank->level(0);
  switch (form_) {
    case Form::kSingleBlock:
      return "overlap-save, FFT " + std::to_string(first.fft_size()) + ", block " + std::to_string(first.block()) + extras();
    case Form::kUniform:
      return "uniformly partitioned overlap-save, " + std::to_string(first.partitions()) +
             (first.partitions() == 1 ? " partition of " : " partitions of ") + std::to_string(first.block()) + extras();
    case Form::kNonUniform:
      return "non-uniformly partitioned overlap-save, partitions x block: " + parts_[0].bank->describe() +
             (worker_ ? ", deferred levels on a second thread" : "") + extras();
    case Form::kDirect: break;
  }
  return "?";
}

}  // namespace vigil
