#include "dsp/streaming_fir_bank.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vigil {

StreamingFirBank::StreamingFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                                   uint32_t max_frames, uint32_t max_latency_frames, FftPlanning planning,
                                   WorkerPool* pool, FirForm form)
    : channels_(channels) {
  size_t longest = 0;
  for (const auto& t : band_taps) longest = std::max(longest, t.size());
  if (form == FirForm::kDirect || (form == FirForm::kAuto && longest <= kDirectMaxTaps)) {
    form_ = Form::kDirect;
    direct_ = std::make_unique<FirBank>(band_taps, channels, max_frames);
    return;
  }
  if (max_latency_frames < 16)
    throw std::invalid_argument("fir bank: " + std::to_string(longest) + " taps need an FFT form with at least 16 frames "
                                "of latency, but the latency limit is " + std::to_string(max_latency_frames));
  const uint32_t block = PartitionedFirBank::uniform_block_within(max_latency_frames);
  std::vector<FirLevel> levels = NonUniformFirBank::plan(longest, block, band_taps.size());
  form_ = levels.size() > 1 ? Form::kNonUniform : Form::kUniform;
  // One big FFT only while it beats the partitions of `block`: when the latency limit is barely
  // above the filter length, the single block's hop shrinks to a few samples per FFT (1023 taps
  // under 256 frames: FFT 1024 for every 2 samples, ~200x the work).
  if (const uint32_t n = PartitionedFirBank::best_fft_size(longest, max_latency_frames)) {
    const std::vector<FirLevel> single = {{PartitionedFirBank::single_block(longest, n), 1}};
    if (NonUniformFirBank::work_per_sample(single, band_taps.size()) <=
        NonUniformFirBank::work_per_sample(levels, band_taps.size())) {
      form_ = Form::kSingleBlock;
      levels = single;
    }
  }
  // One bank per thread over a contiguous range of channels (each staggers its own).
  const uint32_t parts = WorkerPool::parts_for(pool, channels);
  if (parts > 1) pool_ = pool;
  for (uint32_t i = 0; i < parts; ++i) {
    const WorkerPool::Range r = WorkerPool::range(channels, parts, i);
    parts_.push_back({r.first, std::make_unique<NonUniformFirBank>(band_taps, r.end - r.first, levels, planning,
                                                                   BlockPhases::kStaggered)});
  }
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
  for (Part& p : parts_) p.bank->set_taps(band_taps);
}

void StreamingFirBank::reset() noexcept {
  if (direct_)
    direct_->reset();
  else
    for (Part& p : parts_) p.bank->reset();
}

uint32_t StreamingFirBank::latency_frames() const noexcept { return direct_ ? 0 : parts_[0].bank->latency_frames(); }

std::string StreamingFirBank::describe() const {
  auto threads = [&] { return parts_.size() > 1 ? ", channels over " + std::to_string(parts_.size()) + " threads" : std::string(); };
  if (form_ == Form::kDirect) return "direct form";
  const PartitionedFirBank& first = parts_[0].bank->level(0);
  switch (form_) {
    case Form::kSingleBlock:
      return "overlap-save, FFT " + std::to_string(first.fft_size()) + ", block " + std::to_string(first.block()) + threads();
    case Form::kUniform:
      return "uniformly partitioned overlap-save, " + std::to_string(first.partitions()) + " partitions of " +
             std::to_string(first.block()) + threads();
    case Form::kNonUniform:
      return "non-uniformly partitioned overlap-save, partitions x block: " + parts_[0].bank->describe() + threads();
    case Form::kDirect: break;
  }
  return "?";
}

}  // namespace vigil
