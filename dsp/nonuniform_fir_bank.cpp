// RT: process() on the pipeline thread (or a pool thread for its channels).
#include "dsp/nonuniform_fir_bank.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vigil {
namespace {

[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("NonUniformFirBank: " + what); }

size_t longest_of(const std::vector<std::vector<float>>& band_taps) {
  size_t n = 0;
  for (const auto& t : band_taps) n = std::max(n, t.size());
  return n;
}

size_t held(const FirLevel& l) { return size_t(l.partitions) * l.layout.partition; }

}  // namespace

double NonUniformFirBank::work_per_sample(const std::vector<FirLevel>& levels, size_t bands) {
  double work = 0;
  for (const FirLevel& l : levels) {
    const double n = l.layout.fft_size;
    const double ffts = double(1 + bands) * n * std::log2(n);
    const double macs = kMacWeight * double(bands) * l.partitions * (n / 2 + 1);
    work += (ffts + macs) / l.layout.block;
  }
  return work;
}

std::vector<FirLevel> NonUniformFirBank::plan(size_t max_taps, uint32_t base_block, size_t bands, bool background) {
  const PartitionLayout base = PartitionedFirBank::uniform(base_block);  // checks base_block
  auto parts_for = [](size_t taps, uint32_t block) { return uint32_t((taps + block - 1) / block); };
  // In the background the cost is the busier thread's: the caller's (level 0) or the worker's.
  auto cost = [&](const std::vector<FirLevel>& levels) {
    if (!background) return work_per_sample(levels, bands);
    return std::max(work_per_sample({levels[0]}, bands), work_per_sample({levels.begin() + 1, levels.end()}, bands));
  };
  std::vector<FirLevel> best = {{base, parts_for(max_taps, base_block)}};
  double best_cost = cost(best);
  // Levels of D, D g, D g^2, ...: each holds the taps up to the earliest the next may start
  // (block + defer - D), the last the rest (Garcia's and Gardner's schemes when nothing is deferred).
  for (uint32_t g : {2u, 4u, 8u, 16u}) {
    for (uint32_t grown = 1;; ++grown) {
      std::vector<FirLevel> levels;
      size_t offset = 0;
      uint64_t block = base_block;
      bool fits = true;
      for (uint32_t k = 0; k <= grown && fits; ++k) {
        const uint32_t defer = k > 0 && background ? uint32_t(block) / 2 : 0;
        const size_t pad = k > 0 ? offset + base_block - block - defer : 0;
        size_t end = max_taps;
        if (k < grown) {
          const uint64_t next = block * g;
          end = size_t(next + (background ? next / 2 : 0) - base_block);
          fits = end < max_taps && next <= 65536;
        }
        const uint32_t parts = parts_for(pad + end - offset, uint32_t(block));
        levels.push_back({PartitionedFirBank::uniform(uint32_t(block)), parts, defer});
        offset += size_t(parts) * block - pad;
        block *= g;
      }
      if (!fits) break;
      const double c = cost(levels);
      if (c < best_cost) {
        best = levels;
        best_cost = c;
      }
    }
  }
  return best;
}

NonUniformFirBank::NonUniformFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                                     std::vector<FirLevel> levels, FftPlanning planning, BlockPhases phases,
                                     BlockWorker* worker)
    : levels_(std::move(levels)), bands_(band_taps.size()), channels_(channels) {
  if (levels_.empty() || levels_.size() > 16) reject("levels must be 1..16, got " + std::to_string(levels_.size()));
  const uint32_t latency = levels_[0].layout.block;
  size_t offset = 0;
  for (size_t k = 0; k < levels_.size(); ++k) {
    const FirLevel& l = levels_[k];
    const std::string name = "level " + std::to_string(k);
    if (l.partitions < 1) reject(name + " needs at least 1 partition");
    if (k > 0) {
      if (l.layout.partition != l.layout.block) reject(name + " must be uniform (partition == block)");
      if (l.layout.block <= levels_[k - 1].layout.block) reject(name + "'s block must be larger than level " + std::to_string(k - 1) + "'s");
      // Its output comes block + defer samples late; the bank's is due latency samples late.
      if (offset + latency < size_t(l.layout.block) + l.defer)
        reject(name + " (block " + std::to_string(l.layout.block) + ", deferred " + std::to_string(l.defer) +
               ") starts at tap " + std::to_string(offset) + ", before block + defer - latency = " +
               std::to_string(l.layout.block + l.defer - latency));
      if (l.defer > l.layout.block)
        reject(name + "'s defer (" + std::to_string(l.defer) + ") must be at most its block");
    } else if (l.defer) {
      reject("level 0 cannot be deferred: its block is the latency");
    }
    const size_t pad = offset + latency - l.layout.block - l.defer;
    if (pad >= held(l)) reject(name + " holds only the " + std::to_string(pad) + " zeros that delay it");
    offsets_.push_back(offset);
    pads_.push_back(pad);
    offset += held(l) - pad;
  }
  const size_t longest = longest_of(band_taps);
  if (longest > offset) reject("the levels hold " + std::to_string(offset) + " taps, the filter has " + std::to_string(longest));
  if (longest <= offsets_.back())
    reject("the last level starts at tap " + std::to_string(offsets_.back()) + ", past the filter's " +
           std::to_string(longest) + " taps");
  for (size_t k = 0; k < levels_.size(); ++k) {
    const uint32_t phase = uint32_t(k) * latency;  // level k's blocks k * D later: see the header
    banks_.push_back(std::make_unique<PartitionedFirBank>(stretch(band_taps, k), channels, levels_[k].layout, planning,
                                                          phases, phase, levels_[k].defer, worker));
  }
  // What a later set_taps may bring: the last level holds as many partitions as the filter needed.
  const FirLevel& last = levels_.back();
  capacity_ = offsets_.back() + size_t(banks_.back()->partitions()) * last.layout.partition - pads_.back();
}

std::vector<std::vector<float>> NonUniformFirBank::stretch(const std::vector<std::vector<float>>& band_taps,
                                                           size_t k) const {
  std::vector<std::vector<float>> out;
  const size_t first = offsets_[k], room = held(levels_[k]) - pads_[k];
  for (const std::vector<float>& h : band_taps) {
    if (h.size() <= first) {
      out.push_back({0.0f});  // this band ends before the level: it adds nothing
      continue;
    }
    std::vector<float> s(pads_[k], 0.0f);
    const size_t n = std::min(room, h.size() - first);
    s.insert(s.end(), h.begin() + ptrdiff_t(first), h.begin() + ptrdiff_t(first + n));
    out.push_back(std::move(s));
  }
  return out;
}

void NonUniformFirBank::check_taps(const std::vector<std::vector<float>>& band_taps) const {
  if (band_taps.size() != bands_)
    reject("set_taps: expected " + std::to_string(bands_) + " bands, got " + std::to_string(band_taps.size()));
  for (size_t b = 0; b < band_taps.size(); ++b)
    if (band_taps[b].empty() || band_taps[b].size() > capacity_)
      reject("set_taps: band " + std::to_string(b) + " taps must be 1.." + std::to_string(capacity_) + ", got " +
             std::to_string(band_taps[b].size()));
}

NonUniformFirBank::StagedTaps NonUniformFirBank::stage_taps(const std::vector<std::vector<float>>& band_taps) const {
  check_taps(band_taps);
  StagedTaps staged;
  for (size_t k = 0; k < levels_.size(); ++k) staged.push_back(banks_[k]->stage_taps(stretch(band_taps, k)));
  return staged;
}

void NonUniformFirBank::commit_taps(StagedTaps&& staged) noexcept {
  for (size_t k = 0; k < levels_.size(); ++k) banks_[k]->commit_taps(std::move(staged[k]));
}

bool NonUniformFirBank::crossfade_pending() const noexcept {
  for (const auto& b : banks_)
    if (b->crossfade_pending()) return true;
  return false;
}

void NonUniformFirBank::reset() noexcept {
  for (auto& b : banks_) b->reset();
}

void NonUniformFirBank::process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride,
                                size_t band_stride) noexcept {
  if (band_stride == 0) band_stride = size_t(channels_) * out_stride;
  for (size_t k = 0; k < banks_.size(); ++k)
    banks_[k]->process(in, in_stride, frames, out, out_stride, band_stride, k == 0 ? OutputMode::kStore : OutputMode::kAdd);
}

std::string NonUniformFirBank::describe() const {
  std::string s;
  for (size_t k = 0; k < banks_.size(); ++k) {
    s += (k ? ", " : "") + std::to_string(banks_[k]->partitions()) + " x " + std::to_string(banks_[k]->block());
    if (levels_[k].defer) s += " (deferred " + std::to_string(levels_[k].defer) + ")";
  }
  return s;
}

}  // namespace vigil
