// RT: process() on the pipeline thread. The CMAC loop runs on split real/imag arrays so the
// compiler vectorises it for any SIMD width (SSE/AVX on x86-64, NEON on Jetson).
#include "dsp/partitioned_fir_bank.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {

uint32_t partitions_for(size_t taps, uint32_t block) { return uint32_t((taps + block - 1) / block); }

uint32_t checked_partition(uint32_t partition) {
  if (partition < 16 || partition > 65536 || (partition & (partition - 1)))
    throw std::invalid_argument("PartitionedFirBank: partition must be a power of two 16..65536, got " +
                                std::to_string(partition));
  return partition;
}

}  // namespace

PartitionedFirBank::PartitionedFirBank(const std::vector<std::vector<float>>& band_taps, uint32_t channels,
                                       uint32_t partition, FftPlanning planning)
    : bands_(uint32_t(band_taps.size())),
      channels_(channels),
      block_(checked_partition(partition)),
      parts_(0),
      bins_(size_t(partition) + 1),
      stride_((size_t(partition) + 1 + 15) / 16 * 16),
      fft_(2 * size_t(block_), planning) {
  if (band_taps.empty() || band_taps.size() > 256)
    throw std::invalid_argument("PartitionedFirBank: bands must be 1..256, got " + std::to_string(band_taps.size()));
  if (channels < 1 || channels > 4096)
    throw std::invalid_argument("PartitionedFirBank: channels must be 1..4096, got " + std::to_string(channels));
  for (size_t b = 0; b < band_taps.size(); ++b) {
    if (band_taps[b].empty() || band_taps[b].size() > (size_t(1) << 20))
      throw std::invalid_argument("PartitionedFirBank: band " + std::to_string(b) + " taps must be 1..1048576, got " +
                                  std::to_string(band_taps[b].size()));
    parts_ = std::max(parts_, partitions_for(band_taps[b].size(), block_));
  }
  taps_ = make_spectra(band_taps);
  time_ = make_fftw_buffer(size_t(channels_) * 2 * block_);
  fdl_re_ = make_fftw_buffer(size_t(channels_) * parts_ * stride_);
  fdl_im_ = make_fftw_buffer(size_t(channels_) * parts_ * stride_);
  acc_re_ = make_fftw_buffer(2 * stride_);  // [0, stride): current taps, [stride, 2 stride): next taps
  acc_im_ = make_fftw_buffer(2 * stride_);
  ifft_out_ = make_fftw_buffer(2 * 2 * size_t(block_));
  out_ = make_fftw_buffer(size_t(bands_) * channels_ * block_);
}

PartitionedFirBank::Spectra PartitionedFirBank::make_spectra(const std::vector<std::vector<float>>& band_taps) const {
  Spectra s;
  s.re = make_fftw_buffer(size_t(bands_) * parts_ * stride_);
  s.im = make_fftw_buffer(size_t(bands_) * parts_ * stride_);
  FftwBuffer chunk = make_fftw_buffer(2 * size_t(block_));
  for (uint32_t b = 0; b < bands_; ++b) {
    const std::vector<float>& h = band_taps[b];
    const uint32_t used = partitions_for(h.size(), block_);
    s.parts.push_back(used);
    for (uint32_t p = 0; p < used; ++p) {
      // Partition p holds taps [pB, pB + B) at the start of a 2B zero-padded frame.
      std::fill_n(chunk.get(), 2 * size_t(block_), 0.0f);
      const size_t first = size_t(p) * block_;
      const size_t n = std::min<size_t>(block_, h.size() - first);
      std::copy_n(h.data() + first, n, chunk.get());
      const size_t at = (size_t(b) * parts_ + p) * stride_;
      fft_.forward(chunk.get(), s.re.get() + at, s.im.get() + at);
    }
  }
  return s;
}

void PartitionedFirBank::set_taps(const std::vector<std::vector<float>>& band_taps) {
  if (band_taps.size() != bands_)
    throw std::invalid_argument("PartitionedFirBank::set_taps: expected " + std::to_string(bands_) + " bands, got " +
                                std::to_string(band_taps.size()));
  for (size_t b = 0; b < band_taps.size(); ++b)
    if (band_taps[b].empty() || partitions_for(band_taps[b].size(), block_) > parts_)
      throw std::invalid_argument("PartitionedFirBank::set_taps: band " + std::to_string(b) + " taps must be 1.." +
                                  std::to_string(size_t(parts_) * block_) + ", got " +
                                  std::to_string(band_taps[b].size()));
  next_taps_ = make_spectra(band_taps);
  pending_ = true;
}

void PartitionedFirBank::reset() noexcept {
  std::fill_n(time_.get(), size_t(channels_) * 2 * block_, 0.0f);
  std::fill_n(fdl_re_.get(), size_t(channels_) * parts_ * stride_, 0.0f);
  std::fill_n(fdl_im_.get(), size_t(channels_) * parts_ * stride_, 0.0f);
  std::fill_n(out_.get(), size_t(bands_) * channels_ * block_, 0.0f);
  fdl_pos_ = 0;
  fill_ = 0;
}

void PartitionedFirBank::accumulate(const Spectra& h, uint32_t band, uint32_t channel) noexcept {
  float* __restrict ar = acc_re_.get();
  float* __restrict ai = acc_im_.get();
  std::fill_n(ar, bins_, 0.0f);
  std::fill_n(ai, bins_, 0.0f);
  const float* xr_base = fdl_re_.get() + size_t(channel) * parts_ * stride_;
  const float* xi_base = fdl_im_.get() + size_t(channel) * parts_ * stride_;
  for (uint32_t p = 0; p < h.parts[band]; ++p) {
    // Partition p meets the input block from p blocks ago.
    const uint32_t slot = (fdl_pos_ + parts_ - p) % parts_;
    const float* __restrict xr = xr_base + size_t(slot) * stride_;
    const float* __restrict xi = xi_base + size_t(slot) * stride_;
    const float* __restrict hr = h.re.get() + (size_t(band) * parts_ + p) * stride_;
    const float* __restrict hi = h.im.get() + (size_t(band) * parts_ + p) * stride_;
    for (size_t k = 0; k < bins_; ++k) {
      ar[k] += xr[k] * hr[k] - xi[k] * hi[k];
      ai[k] += xr[k] * hi[k] + xi[k] * hr[k];
    }
  }
}

void PartitionedFirBank::run_block() noexcept {
  const size_t n = 2 * size_t(block_);
  const float scale = 1.0f / float(n);
  fdl_pos_ = (fdl_pos_ + 1) % parts_;
  const bool crossfade = pending_;
  for (uint32_t c = 0; c < channels_; ++c) {
    float* t = time_.get() + c * n;
    const size_t slot = (size_t(c) * parts_ + fdl_pos_) * stride_;
    fft_.forward(t, fdl_re_.get() + slot, fdl_im_.get() + slot);
    std::copy_n(t + block_, block_, t);  // this block becomes the previous one
    for (uint32_t b = 0; b < bands_; ++b) {
      float* y = out_.get() + (size_t(b) * channels_ + c) * block_;
      float* ifft = ifft_out_.get();
      accumulate(taps_, b, c);
      fft_.inverse(acc_re_.get(), acc_im_.get(), ifft);
      if (!crossfade) {
        // Overlap-save: the last B samples of the circular convolution are the linear ones.
        for (uint32_t i = 0; i < block_; ++i) y[i] = ifft[block_ + i] * scale;
        continue;
      }
      float* ifft_new = ifft_out_.get() + n;
      accumulate(next_taps_, b, c);
      fft_.inverse(acc_re_.get(), acc_im_.get(), ifft_new);
      for (uint32_t i = 0; i < block_; ++i) {
        const float w = float(i + 1) / float(block_);  // reaches the new filter on the block's last sample
        y[i] = ((1.0f - w) * ifft[block_ + i] + w * ifft_new[block_ + i]) * scale;
      }
    }
  }
  if (crossfade) {
    std::swap(taps_, next_taps_);
    pending_ = false;
  }
}

void PartitionedFirBank::process(const float* in, size_t in_stride, uint32_t frames, float* out,
                                 size_t out_stride) noexcept {
  uint32_t done = 0;
  while (done < frames) {
    const uint32_t n = std::min(block_ - fill_, frames - done);
    for (uint32_t c = 0; c < channels_; ++c)
      std::copy_n(in + c * in_stride + done, n, time_.get() + size_t(c) * 2 * block_ + block_ + fill_);
    for (uint32_t lane = 0; lane < bands_ * channels_; ++lane)
      std::copy_n(out_.get() + size_t(lane) * block_ + fill_, n, out + lane * out_stride + done);
    fill_ += n;
    done += n;
    if (fill_ == block_) {
      run_block();
      fill_ = 0;
    }
  }
}

}  // namespace vigil
