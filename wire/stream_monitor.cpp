#include "wire/stream_monitor.hpp"

namespace vigil {

void StreamMonitor::on_packet(const vita49::Decoded& p) {
  StreamStats& s = streams_[p.stream_id];
  s.stream_id = p.stream_id;
  if (p.type == vita49::PacketType::kContext) {
    ++s.context_packets;
    if (p.has_sample_rate) s.rate_hz = p.sample_rate_hz;
    return;
  }
  const __int128 ts = __int128(p.ts_int) * 1'000'000'000'000 + p.ts_frac;
  if (!s.have_first) {
    s.have_first = true;
    s.first_ts_int = p.ts_int;
    s.first_ts_frac_ps = p.ts_frac;
  } else {
    s.gaps += uint8_t(p.packet_count - s.last_count - 1) & 0xF;
    const bool stepped = p.has_trailer && (p.trailer & vita49::kTrailerTimeStepEnable) &&
                         (p.trailer & vita49::kTrailerTimeStep);
    bool broken = stepped || ts <= s.last_ts_ps;
    if (stepped)
      ++s.time_steps;
    else if (broken)
      ++s.timestamp_errors;
    if (s.rate_hz > 0 && !stepped) {
      // Samples between where the previous packet ended and where this one starts (timestamps
      // are exact picoseconds for integer rates; round to whole samples).
      const double gap = double(ts - s.last_ts_ps) * s.rate_hz / 1e12 - double(s.last_samples);
      if (gap > 0.5 && gap < 1e15) {
        s.samples_missing += uint64_t(gap + 0.5);
        ++s.holes;
        broken = true;
      } else if (gap < -0.5 && gap > -1e15) {
        s.samples_overlapping += uint64_t(-gap + 0.5);
        ++s.overlaps;
        broken = true;
      }
    }
    if (broken) ++s.breaks;
  }
  if (p.has_trailer && (p.trailer & vita49::kTrailerSampleLossEnable) && (p.trailer & vita49::kTrailerSampleLoss))
    ++s.sample_loss_flags;
  s.last_count = p.packet_count;
  s.last_ts_ps = ts;
  s.last_samples = p.samples;
  ++s.packets;
  s.samples += p.samples;
}

uint64_t StreamMonitor::on_event_seq(const std::string& sender, uint64_t seq) {
  ++events_;
  auto it = next_seq_.find(sender);
  uint64_t missed = 0;
  if (it != next_seq_.end() && seq > it->second) missed = seq - it->second;
  event_gaps_ += missed;
  next_seq_[sender] = seq + 1;
  return missed;
}

}  // namespace vigil
