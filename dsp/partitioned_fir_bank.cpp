// RT: process() on the pipeline thread.
#include "dsp/partitioned_fir_bank.hpp"

#include "core/block_worker.hpp"
#include "dsp/simd.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {

[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("PartitionedFirBank: " + what); }

uint32_t partitions_for(size_t taps, uint32_t partition) { return uint32_t((taps + partition - 1) / partition); }

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

const PartitionLayout& checked(const PartitionLayout& l) {
  if (l.block < 1) reject("block must be >= 1, got 0");
  if (l.partition < 1) reject("partition must be >= 1, got 0");
  if (!power_of_two(l.fft_size) || l.fft_size < 32 || l.fft_size > (1u << 22))
    reject("fft_size must be a power of two 32..4194304, got " + std::to_string(l.fft_size));
  if (uint64_t(l.partition) + l.block - 1 > l.fft_size)
    reject("fft_size " + std::to_string(l.fft_size) + " is smaller than partition + block - 1 = " +
           std::to_string(uint64_t(l.partition) + l.block - 1));
  return l;
}

}  // namespace

PartitionLayout PartitionedFirBank::uniform(uint32_t block) {
  if (block < 16 || block > 65536 || !power_of_two(block))
    reject("uniform block must be a power of two 16..65536, got " + std::to_string(block));
  return {block, block, 2 * block};
}

PartitionLayout PartitionedFirBank::single_block(size_t max_taps, uint32_t fft_size) {
  if (max_taps < 1 || max_taps >= fft_size)
    reject("single_block needs 1 <= taps < fft_size, got taps " + std::to_string(max_taps) + ", fft_size " +
           std::to_string(fft_size));
  return {uint32_t(fft_size - max_taps + 1), uint32_t(max_taps), fft_size};
}

uint32_t PartitionedFirBank::uniform_block_within(uint32_t max_frames) noexcept {
  uint32_t block = 16;
  while (block * 2 <= std::min<uint32_t>(max_frames, 65536)) block *= 2;
  return block;
}

uint32_t PartitionedFirBank::best_fft_size(size_t max_taps, uint32_t max_block) {
  uint32_t best = 0;
  double best_cost = 0;
  for (uint64_t n = 32; n <= (1u << 22); n *= 2) {
    if (n <= max_taps) continue;
    const uint64_t hop = n - max_taps + 1;
    if (hop > max_block) break;
    const double cost = double(n) * std::log2(double(n)) / double(hop);
    if (!best || cost < best_cost) {
      best = uint32_t(n);
      best_cost = cost;
    }
  }
  return best;
}

PartitionedFirBank::PartitionedFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                                       PartitionLayout layout, FftPlanning planning, BlockPhases phases,
                                       uint32_t phase, uint32_t defer, BlockWorker* worker)
    : bands_(uint32_t(band_taps.size())),
      channels_(channels),
      layout_(checked(layout)),
      phases_(phases),
      phase_(phase % layout.block),
      defer_(defer),
      worker_(defer ? worker : nullptr),
      bins_(size_t(layout.fft_size) / 2 + 1),
      stride_((size_t(layout.fft_size) / 2 + 1 + 15) / 16 * 16),
      spectrum_floats_((2 * (size_t(layout.fft_size) / 2 + 1) + 15) / 16 * 16),
      fft_(layout.fft_size, planning) {
  if (band_taps.empty() || band_taps.size() > 256) reject("bands must be 1..256, got " + std::to_string(band_taps.size()));
  if (channels < 1 || channels > 4096) reject("channels must be 1..4096, got " + std::to_string(channels));
  if (defer > layout_.block)
    reject("defer must be 0..block (" + std::to_string(layout_.block) + "), got " + std::to_string(defer));
  for (size_t b = 0; b < band_taps.size(); ++b) {
    if (band_taps[b].empty() || band_taps[b].size() > (size_t(1) << 20))
      reject("band " + std::to_string(b) + " taps must be 1..1048576, got " + std::to_string(band_taps[b].size()));
    parts_ = std::max(parts_, partitions_for(band_taps[b].size(), layout_.partition));
  }
  // Partition p must meet the input delayed by p * L samples, which the delay line (in steps of
  // B) provides only when L == B.
  if (parts_ > 1 && layout_.partition != layout_.block)
    reject("a filter longer than one partition (" + std::to_string(layout_.partition) +
           " taps) needs partition == block, got block " + std::to_string(layout_.block));
  taps_ = make_spectra(band_taps);
  const size_t buffers = defer_ ? 2 : 1;
  time_ = make_fftw_buffer(buffers * channels_ * layout_.fft_size);
  fdl_ = make_fftw_buffer(size_t(channels_) * parts_ * 2 * stride_);
  acc_ = make_fftw_buffer(2 * stride_);
  scratch_ = make_fftw_buffer(spectrum_floats_);
  ifft_out_ = make_fftw_buffer(2 * size_t(layout_.fft_size));
  out_ = make_fftw_buffer(buffers * bands_ * channels_ * layout_.block);
  state_.resize(channels_);
  for (uint32_t c = 0; c < channels_; ++c) state_[c].fill = initial_fill(c);
}

PartitionedFirBank::~PartitionedFirBank() { drain(); }

void PartitionedFirBank::drain() const noexcept {
  if (worker_) worker_->drain();
}

bool PartitionedFirBank::crossfade_pending() const noexcept {
  drain();
  return switches_left_ > 0 || queued_.data;
}

uint32_t PartitionedFirBank::initial_fill(uint32_t channel) const noexcept {
  // A channel whose first block is short by s samples (as if s zeros had preceded the stream) has
  // its boundaries s samples later. Staggered: G phase groups, G <= C, at least 32 samples apart
  // (process() works in runs between boundaries); group g's boundaries fall g * B / G later.
  const uint32_t b = layout_.block;
  uint32_t shift = phase_;
  if (phases_ == BlockPhases::kStaggered) {
    const uint32_t groups = std::max(1u, std::min(channels_, b / 32));
    shift += uint32_t(uint64_t(channel) * groups / channels_) * (b / groups);
  }
  return (b - shift % b) % b;
}

PartitionedFirBank::Spectra PartitionedFirBank::make_spectra(const std::vector<std::vector<float>>& band_taps) const {
  Spectra s;
  s.data = make_fftw_buffer(size_t(bands_) * parts_ * 2 * stride_);
  FftwBuffer frame = make_fftw_buffer(layout_.fft_size), scratch = make_fftw_buffer(spectrum_floats_);
  const float scale = 1.0f / float(layout_.fft_size);  // folds the inverse FFT's factor N into the taps
  for (uint32_t b = 0; b < bands_; ++b) {
    const std::vector<float>& h = band_taps[b];
    const uint32_t used = partitions_for(h.size(), layout_.partition);
    s.parts.push_back(used);
    for (uint32_t p = 0; p < used; ++p) {
      std::fill_n(frame.get(), layout_.fft_size, 0.0f);
      const size_t first = size_t(p) * layout_.partition;
      const size_t n = std::min<size_t>(layout_.partition, h.size() - first);
      for (size_t i = 0; i < n; ++i) frame[i] = h[first + i] * scale;
      float* re = s.data.get() + (size_t(b) * parts_ + p) * 2 * stride_;
      fft_.forward_split(frame.get(), scratch.get(), re, re + stride_);
    }
  }
  return s;
}

PartitionedFirBank::StagedTaps PartitionedFirBank::stage_taps(const std::vector<std::vector<float>>& band_taps) const {
  if (band_taps.size() != bands_)
    reject("set_taps: expected " + std::to_string(bands_) + " bands, got " + std::to_string(band_taps.size()));
  for (size_t b = 0; b < band_taps.size(); ++b)
    if (band_taps[b].empty() || partitions_for(band_taps[b].size(), layout_.partition) > parts_)
      reject("set_taps: band " + std::to_string(b) + " taps must be 1.." +
             std::to_string(size_t(parts_) * layout_.partition) + ", got " + std::to_string(band_taps[b].size()));
  return make_spectra(band_taps);
}

void PartitionedFirBank::commit_taps(StagedTaps&& staged) noexcept {
  drain();  // the worker's blocks read the taps and the crossfade's state
  if (switches_left_ == 0) {
    next_taps_ = std::move(staged);
    start_switch();
  } else if (switches_left_ == channels_) {
    next_taps_ = std::move(staged);  // no channel has crossed over yet: the latest replaces it
  } else {
    queued_ = std::move(staged);  // follows once every channel is on next_taps_
  }
}

void PartitionedFirBank::start_switch() noexcept {
  for (Channel& ch : state_) ch.switch_due = true;
  switches_left_ = channels_;
}

void PartitionedFirBank::reset() noexcept {
  drain();
  const size_t buffers = defer_ ? 2 : 1;
  std::fill_n(time_.get(), buffers * channels_ * layout_.fft_size, 0.0f);
  std::fill_n(fdl_.get(), size_t(channels_) * parts_ * 2 * stride_, 0.0f);
  std::fill_n(out_.get(), buffers * bands_ * channels_ * layout_.block, 0.0f);
  for (uint32_t c = 0; c < channels_; ++c) {
    state_[c].fill = initial_fill(c);
    state_[c].fdl_pos = 0;
    state_[c].window = 0;
    state_[c].queued = false;
  }
}

namespace {

// Partitions' complex products X_j * H_j on split arrays, into the partial sums a: kFirst starts
// them, kAdd adds to them. The loop is the bank's hottest (S3: a sixth of vigild's CPU) and is
// bound by its loads and stores, not its multiply-adds, so up to four partitions are summed in
// registers before they meet the partial sums: a loaded and stored once for four partitions, not
// once for each (S3's bank on one thread 13.2 -> 11.5 us a chunk on a 2-vCPU Xeon). Built per
// instruction set (VIGIL_SIMD_CLONES): the AVX-512 clone took S3's bank from 10.9 to 8.1 us a
// chunk on the 2-core EPYC.
enum class Mac { kFirst, kAdd };

struct MacTerm {
  const float* xr;
  const float* xi;
  const float* hr;
  const float* hi;
};

template <int G, Mac kMode>
[[gnu::always_inline]] inline void mac_terms(const MacTerm* t, float* ar, float* ai, size_t n) noexcept {
  const float *xr[G], *xi[G], *hr[G], *hi[G];
  for (int j = 0; j < G; ++j) {
    xr[j] = t[j].xr;
    xi[j] = t[j].xi;
    hr[j] = t[j].hr;
    hi[j] = t[j].hi;
  }
  // The terms' arrays never alias the partial sums: vectorise without checking.
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#else
#pragma GCC ivdep
#endif
  for (size_t k = 0; k < n; ++k) {
    float re = xr[0][k] * hr[0][k] - xi[0][k] * hi[0][k];
    float im = xr[0][k] * hi[0][k] + xi[0][k] * hr[0][k];
    for (int j = 1; j < G; ++j) {
      re += xr[j][k] * hr[j][k] - xi[j][k] * hi[j][k];
      im += xr[j][k] * hi[j][k] + xi[j][k] * hr[j][k];
    }
    if constexpr (kMode == Mac::kFirst) {
      ar[k] = re;
      ai[k] = im;
    } else {
      ar[k] += re;
      ai[k] += im;
    }
  }
}

// terms: 1..4, the partitions' spectra (none of them aliasing a).
VIGIL_SIMD_CLONES
void spectral_mac(Mac mode, const MacTerm* t, uint32_t terms, float* ar, float* ai, size_t n) noexcept {
  const bool first = mode == Mac::kFirst;
  switch (terms) {
    case 1:
      return first ? mac_terms<1, Mac::kFirst>(t, ar, ai, n) : mac_terms<1, Mac::kAdd>(t, ar, ai, n);
    case 2:
      return first ? mac_terms<2, Mac::kFirst>(t, ar, ai, n) : mac_terms<2, Mac::kAdd>(t, ar, ai, n);
    case 3:
      return first ? mac_terms<3, Mac::kFirst>(t, ar, ai, n) : mac_terms<3, Mac::kAdd>(t, ar, ai, n);
    default:
      return first ? mac_terms<4, Mac::kFirst>(t, ar, ai, n) : mac_terms<4, Mac::kAdd>(t, ar, ai, n);
  }
}

}  // namespace

// The inverse FFT of sum over partitions p of X[newest - p] * H_b[p], complex, element-wise on
// split arrays (real parts, then imaginary parts): all partitions but the last summed into acc_ by
// plain multiply-adds that vectorise with no shuffle, reading 16 bytes a bin and partition; the
// last partition's products taken in the inverse FFT's own pass over the bins.
void PartitionedFirBank::filter_band(const Spectra& h, uint32_t band, uint32_t channel, float* out) noexcept {
  const float* x_base = fdl_.get() + size_t(channel) * parts_ * 2 * stride_;
  const uint32_t newest = state_[channel].fdl_pos, used = h.parts[band];
  float* ar = acc_.get();
  float* ai = ar + stride_;
  // Partition p meets the input block from p blocks ago.
  auto term = [&](uint32_t p) {
    const float* xr = x_base + size_t((newest + parts_ - p) % parts_) * 2 * stride_;
    const float* hr = h.data.get() + (size_t(band) * parts_ + p) * 2 * stride_;
    return MacTerm{xr, xr + stride_, hr, hr + stride_};
  };
  MacTerm group[4];
  for (uint32_t p = 0; p + 1 < used;) {
    const uint32_t terms = std::min<uint32_t>(4, used - 1 - p);
    for (uint32_t j = 0; j < terms; ++j) group[j] = term(p + j);
    spectral_mac(p == 0 ? Mac::kFirst : Mac::kAdd, group, terms, ar, ai, bins_);
    p += terms;
  }
  const MacTerm last = term(used - 1);
  const bool sum = used > 1;
  fft_.inverse_of_product(last.xr, last.xi, last.hr, last.hi, sum ? ar : nullptr, sum ? ai : nullptr,
                          scratch_.get(), out);
}

void PartitionedFirBank::run_block(uint32_t c, uint32_t window) noexcept {
  const uint32_t n = layout_.fft_size, b_len = layout_.block;
  Channel& ch = state_[c];
  channel_blocks_.store(channel_blocks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  ch.fdl_pos = (ch.fdl_pos + 1) % parts_;
  const bool crossfade = ch.switch_due;
  const Spectra& taps = ch.on_next ? next_taps_ : taps_;
  float* t = window_of(c, window);
  float* scratch = scratch_.get();
  float* newest = fdl_.get() + (size_t(c) * parts_ + ch.fdl_pos) * 2 * stride_;
  fft_.forward_split(t, scratch, newest, newest + stride_);
  // The next block's window starts with this one's last N - B samples: slid in place, or (deferred)
  // copied into the other window, whose end process() is filling meanwhile.
  std::copy(t + b_len, t + n, defer_ ? window_of(c, window ^ 1) : t);
  for (uint32_t b = 0; b < bands_; ++b) {
    float* y = output_of(b, c, window);
    float* ifft = ifft_out_.get();
    filter_band(taps, b, c, ifft);
    // Overlap-save: the last B samples of the circular convolution are the linear ones.
    const float* lin = ifft + (n - b_len);
    if (!crossfade) {
      std::copy_n(lin, b_len, y);
      continue;
    }
    float* ifft_new = ifft_out_.get() + n;
    filter_band(next_taps_, b, c, ifft_new);
    const float* lin_new = ifft_new + (n - b_len);
    for (uint32_t i = 0; i < b_len; ++i) {
      const float w = float(i + 1) / float(b_len);  // all new on the block's last sample
      y[i] = (1.0f - w) * lin[i] + w * lin_new[i];
    }
  }
  if (!crossfade) return;
  ch.switch_due = false;
  ch.on_next = true;
  if (--switches_left_ > 0) return;
  // Every channel has crossed over: next_taps_ becomes the filter; a queued one starts next.
  std::swap(taps_, next_taps_);
  for (Channel& other : state_) other.on_next = false;
  if (queued_.data) {
    next_taps_ = std::move(queued_);
    queued_ = Spectra{};
    start_switch();
  }
}

// A BlockWorker job: one channel's block (arg: channel << 1 | input window).
void PartitionedFirBank::run_queued_block(void* bank, uint32_t arg) noexcept {
  static_cast<PartitionedFirBank*>(bank)->run_block(arg >> 1, arg & 1);
}

void PartitionedFirBank::wait_for_block(Channel& ch) const noexcept {
  if (!ch.queued) return;
  worker_->wait(ch.ticket);
  ch.queued = false;
}

void PartitionedFirBank::process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride,
                                 size_t band_stride, OutputMode mode) noexcept {
  const uint32_t n = layout_.fft_size, b_len = layout_.block, defer = defer_;
  if (band_stride == 0) band_stride = size_t(channels_) * out_stride;
  // In time order, up to the next block boundary of any channel, so that what happens at a
  // boundary (a tap swap starting, ending) falls on the same sample however the stream is chunked;
  // deferred, also up to the sample where a channel's output moves on to its last block's.
  for (uint32_t done = 0; done < frames;) {
    uint32_t k = frames - done;
    for (const Channel& ch : state_) {
      k = std::min(k, b_len - ch.fill);
      if (ch.fill < defer) k = std::min(k, defer - ch.fill);
    }
    for (uint32_t c = 0; c < channels_; ++c) {
      Channel& ch = state_[c];
      const uint32_t fill = ch.fill;
      std::copy_n(in + c * in_stride + done, k, window_of(c, ch.window) + (n - b_len) + fill);
      // Not deferred: the last block's output, from its start. Deferred: the block before it
      // until `defer` samples into this one, then the last block's (once the worker has run it).
      uint32_t from = ch.window, at = fill;
      if (defer) {
        if (fill < defer) {
          at = b_len - defer + fill;
        } else {
          if (fill == defer) wait_for_block(ch);
          from ^= 1;
          at = fill - defer;
        }
      }
      for (uint32_t b = 0; b < bands_; ++b) {
        const float* __restrict ready = output_of(b, c, from) + at;
        float* __restrict dst = out + b * band_stride + c * out_stride + done;
        if (mode == OutputMode::kStore)
          std::copy_n(ready, k, dst);
        else
          for (uint32_t i = 0; i < k; ++i) dst[i] += ready[i];
      }
    }
    for (uint32_t c = 0; c < channels_; ++c) {
      Channel& ch = state_[c];
      ch.fill += k;
      if (ch.fill < b_len) continue;
      ch.fill = 0;
      if (!defer) {
        run_block(c, 0);
        continue;
      }
      // The block in window w writes output block w and the overlap into window w ^ 1, which
      // fills next; the last block (in window w ^ 1) must have finished with both.
      const uint32_t w = ch.window;
      ch.window = w ^ 1;
      if (!worker_) {
        run_block(c, w);
        continue;
      }
      wait_for_block(ch);
      ch.ticket = worker_->submit(&PartitionedFirBank::run_queued_block, this, c << 1 | w);
      ch.queued = true;
    }
    done += k;
  }
}

}  // namespace vigil
