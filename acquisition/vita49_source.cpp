// RT: read() on the capture thread: poll, recvmmsg into preallocated buffers, copy into rings.
#include "acquisition/vita49_source.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/clock.hpp"
#include "core/stream_format.hpp"
#include "wire/endpoint.hpp"
#include "wire/udp_receiver.hpp"
#include "wire/vita49.hpp"

namespace vigil {
namespace {

constexpr size_t kBatch = 32;
constexpr size_t kDatagramBytes = 65536;
constexpr size_t kControlBytes = 64;  // room for SO_RXQ_OVFL's count

__int128 packet_ps(const vita49::Decoded& d) noexcept {
  return __int128(d.ts_int) * 1'000'000'000'000 + __int128(d.ts_frac);
}

// Frames from the line's origin to `rel_ps` later, to the nearest frame (negative before it).
int64_t frames_at(__int128 rel_ps, double rate_hz) noexcept {
  const auto rate = static_cast<__int128>(rate_hz);
  const bool whole = double(rate) == rate_hz && rate > 0;
  const __int128 magnitude = rel_ps < 0 ? -rel_ps : rel_ps;
  const __int128 f = whole ? (magnitude * rate + 500'000'000'000) / 1'000'000'000'000
                           : __int128(std::llround(double(magnitude) * rate_hz / 1e12));
  return int64_t(rel_ps < 0 ? -f : f);
}

std::string hz(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string hex_list(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += (s.empty() ? "" : ", ") + vita49::stream_id_hex(id);
  return s;
}

// Big-endian samples of `bytes` each into host order.
void to_host(const uint8_t* in, uint8_t* out, size_t n, uint32_t bytes) noexcept {
  if (bytes == 2) {
    for (size_t i = 0; i < n; ++i) {
      out[2 * i] = in[2 * i + 1];
      out[2 * i + 1] = in[2 * i];
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, in + 4 * i, 4);
    v = __builtin_bswap32(v);
    std::memcpy(out + 4 * i, &v, 4);
  }
}

}  // namespace

Vita49Source::Vita49Source(Vita49SourceSpec spec) : spec_(std::move(spec)) {
  const std::string where = "vita49 source on " + format_endpoint({spec_.listen_host, spec_.listen_port});
  if (!(spec_.rate_hz > 0)) throw std::runtime_error(where + ": rate_hz must be above 0");
  if (spec_.chunk_frames < 1 || spec_.chunk_frames > (1u << 20))
    throw std::runtime_error(where + ": chunk_frames must be 1..1048576");
  if (!spec_.streams.empty()) spec_.channels = uint32_t(spec_.streams.size());
  if (spec_.channels < 1 || spec_.channels > kMaxChannels)
    throw std::runtime_error(where + ": channels must be 1.." + std::to_string(kMaxChannels));
  std::string why;
  fd_ = open_udp_receiver(spec_.listen_host, spec_.listen_port, spec_.receive_buffer_bytes, spec_.interface, why);
  if (fd_ < 0) throw std::runtime_error(where + ": " + why);
  buffers_.resize(kBatch * kDatagramBytes);
  msgs_.resize(kBatch);
  iovs_.resize(kBatch);
  controls_.assign(kBatch, std::vector<uint8_t>(kControlBytes));
  for (size_t i = 0; i < kBatch; ++i) {
    iovs_[i] = {buffers_.data() + i * kDatagramBytes, kDatagramBytes};
    msgs_[i] = {};
    msgs_[i].msg_hdr.msg_iov = &iovs_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
  try {
    wait_for_streams();
  } catch (...) {
    close(fd_);
    throw;
  }
  format_.rate_hz = spec_.rate_hz;
  format_.channels = spec_.channels;
  format_.chunk_frames = spec_.chunk_frames;
  format_.scale = full_scale_factor(format_.format);
  bytes_per_sample_ = uint32_t(bytes_per_sample(format_.format));
  // The rings hold what a chunk may wait for: its own frames, the wait, and as much again.
  const uint64_t want = 2 * (uint64_t(spec_.chunk_frames) + uint64_t(std::ceil(spec_.max_wait_s * spec_.rate_hz))) + 4096;
  ring_frames_ = std::max<uint64_t>(want, 4 * uint64_t(spec_.chunk_frames));
  if (ring_frames_ * spec_.channels * bytes_per_sample_ > (uint64_t(1) << 30))
    throw std::runtime_error(where + ": max_wait_s " + std::to_string(spec_.max_wait_s) + " at " +
                             std::to_string(spec_.rate_hz) + " Hz on " + std::to_string(spec_.channels) +
                             " channels needs more than 1 GiB of buffers: give a shorter wait");
  lanes_.resize(spec_.channels);
  for (Lane& l : lanes_) l.ring.assign(ring_frames_ * bytes_per_sample_, 0);
}

Vita49Source::~Vita49Source() {
  if (fd_ >= 0) close(fd_);
}

// Until every stream is known (listed, or the first ones to appear) and the context packets gave
// the format (or the spec does): what comes meanwhile only tells, the line starts at read().
void Vita49Source::wait_for_streams() {
  const std::string where = "vita49 source on " + format_endpoint({spec_.listen_host, spec_.listen_port});
  ids_ = spec_.streams;
  std::vector<bool> has_format(spec_.channels, false);
  std::optional<SampleFormat> seen;
  const int64_t until = mono_now_ns() + int64_t(spec_.start_timeout_s * 1e9);
  auto done = [&] {
    if (ids_.size() < spec_.channels) return false;
    if (spec_.format) return true;
    return std::all_of(has_format.begin(), has_format.end(), [](bool b) { return b; });
  };
  while (!done()) {
    const int64_t left_ms = (until - mono_now_ns()) / 1'000'000;
    if (left_ms <= 0) {
      std::string missing;
      if (ids_.size() < spec_.channels)
        missing = std::to_string(ids_.size()) + " of " + std::to_string(spec_.channels) + " streams came" +
                  (ids_.empty() ? std::string() : " (" + hex_list(ids_) + ")");
      else {
        std::vector<uint32_t> without;
        for (size_t i = 0; i < ids_.size(); ++i)
          if (!has_format[i]) without.push_back(ids_[i]);
        missing = "no context packet with a payload format from stream" + std::string(without.size() > 1 ? "s " : " ") +
                  hex_list(without) + " (give source.format for a sender that sends none)";
      }
      char within[32];
      std::snprintf(within, sizeof within, "%g", spec_.start_timeout_s);
      throw std::runtime_error(where + ": within " + within + " s, " + missing);
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, int(std::min<int64_t>(left_ms, 100))) <= 0) continue;
    const int n = recvmmsg(fd_, msgs_.data(), unsigned(kBatch), MSG_DONTWAIT, nullptr);
    for (int i = 0; i < n; ++i) {
      vita49::Decoded d;
      if (!vita49::decode(buffers_.data() + size_t(i) * kDatagramBytes, msgs_[size_t(i)].msg_len, d)) continue;
      auto at = std::find(ids_.begin(), ids_.end(), d.stream_id);
      if (at == ids_.end()) {
        if (!spec_.streams.empty() || ids_.size() >= spec_.channels) continue;
        ids_.push_back(d.stream_id);
        at = ids_.end() - 1;
      }
      if (d.type != vita49::PacketType::kContext) continue;
      const std::string stream = "stream " + vita49::stream_id_hex(d.stream_id);
      if (d.has_sample_rate && std::fabs(d.sample_rate_hz - spec_.rate_hz) > 1e-6 * spec_.rate_hz)
        throw std::runtime_error(where + ": " + stream + "'s context packets say " + hz(d.sample_rate_hz) +
                                 " Hz; source.rate_hz is " + hz(spec_.rate_hz) +
                                 " (the stages are designed for it: give the sender's rate)");
      if (!d.has_payload_format) continue;
      SampleFormat f;
      std::string why;
      if (!vita49::payload_sample_format(d.payload_format, f, &why))
        throw std::runtime_error(where + ": " + stream + " carries " + why);
      const SampleFormat agreed = spec_.format ? *spec_.format : seen ? *seen : f;
      if (f != agreed)
        throw std::runtime_error(where + ": " + stream + " carries " + std::string(to_string(f)) + ", " +
                                 (spec_.format ? "not source.format " : "the others ") +
                                 std::string(to_string(agreed)) + " (all streams must carry one format)");
      seen = f;
      has_format[size_t(at - ids_.begin())] = true;
    }
  }
  format_.format = spec_.format ? *spec_.format : *seen;
}

int Vita49Source::lane_of(uint32_t stream_id) const noexcept {
  for (size_t i = 0; i < ids_.size(); ++i)
    if (ids_[i] == stream_id) return int(i);
  return -1;
}

std::string Vita49Source::describe() const {
  return "vita49 on " + format_endpoint({spec_.listen_host, spec_.listen_port}) + ", streams " + hex_list(ids_) +
         ", " + std::string(to_string(format_.format));
}

std::vector<std::pair<const char*, uint64_t>> Vita49Source::counts() const {
  return {{"packets", packets_.load(std::memory_order_relaxed)},
          {"packets_lost", packets_lost_.load(std::memory_order_relaxed)},
          {"frames_lost", frames_lost_.load(std::memory_order_relaxed)},
          {"missing_samples", missing_samples_.load(std::memory_order_relaxed)},
          {"late_packets", late_packets_.load(std::memory_order_relaxed)},
          {"foreign_packets", foreign_packets_.load(std::memory_order_relaxed)},
          {"kernel_drops", kernel_drops_.load(std::memory_order_relaxed)}};
}

void Vita49Source::add_hole(uint64_t from, uint64_t to) noexcept {
  if (from >= to) return;
  size_t i = 0;
  while (i < hole_count_ && holes_[i].to < from) ++i;
  if (i < hole_count_ && holes_[i].from <= to) {  // overlaps or touches: merged, and with those after
    holes_[i].from = std::min(holes_[i].from, from);
    holes_[i].to = std::max(holes_[i].to, to);
    size_t j = i + 1;
    while (j < hole_count_ && holes_[j].from <= holes_[i].to) holes_[i].to = std::max(holes_[i].to, holes_[j++].to);
    std::copy(holes_ + j, holes_ + hole_count_, holes_ + i + 1);
    hole_count_ -= j - i - 1;
    return;
  }
  if (hole_count_ == kMaxHoles) {  // full: the last one grows to take it (more frames go, counted)
    holes_[kMaxHoles - 1].from = std::min(holes_[kMaxHoles - 1].from, from);
    holes_[kMaxHoles - 1].to = std::max(holes_[kMaxHoles - 1].to, to);
    return;
  }
  std::copy_backward(holes_ + i, holes_ + hole_count_, holes_ + hole_count_ + 1);
  holes_[i] = {from, to};
  ++hole_count_;
}

// Samples of one stream from `frame` on into its ring. Frames it skipped are a hole (a loss), or
// zeros where it was silent or had not begun (missing samples).
void Vita49Source::put(Lane& lane, uint64_t frame, const uint8_t* samples, size_t n) noexcept {
  const uint32_t b = bytes_per_sample_;
  if (!lane.started && !started_) {  // before the first chunk: the line begins where all streams have
    lane.filled_to = frame;
    next_frame_ = std::max(next_frame_, frame);
  }
  const uint64_t end = frame + n;
  if (end <= lane.filled_to) {
    late_packets_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (frame < lane.filled_to) {  // partly after what went: the rest is taken
    samples += (lane.filled_to - frame) * b;
    frame = lane.filled_to;
  }
  const uint64_t window_end = next_frame_ + ring_frames_;
  if (frame > lane.filled_to) {
    if (lane.started && !lane.silent) {
      add_hole(lane.filled_to, frame);
    } else {  // it had not begun, or was silent: zeros up to its samples, within the window
      const uint64_t from = std::max(lane.filled_to, next_frame_), to = std::min(frame, window_end);
      for (uint64_t f = from; f < to; ++f) std::memset(&lane.ring[(f % ring_frames_) * b], 0, b);
      if (to > from) missing_samples_.fetch_add(to - from, std::memory_order_relaxed);
      // Beyond the window no stream can have frames (each is cut there): the frames up to its
      // samples are lost, for every stream, rather than chunks of zeros delivered up to them (a
      // timestamp far ahead would otherwise be hours of zeros, chunk by chunk).
      if (frame > window_end) add_hole(window_end, frame);
    }
  }
  lane.started = true;
  lane.silent = false;
  const uint64_t kept_end = std::min(end, window_end);  // beyond: it ran ahead of the others too far
  if (kept_end < end) add_hole(std::max(frame, kept_end), end);
  for (uint64_t f = frame; f < kept_end;) {
    const uint64_t at = f % ring_frames_, run = std::min(kept_end - f, ring_frames_ - at);
    to_host(samples + (f - frame) * b, &lane.ring[at * b], run, b);
    f += run;
  }
  lane.filled_to = end;
}

void Vita49Source::take(const uint8_t* data, size_t size, int64_t now) noexcept {
  vita49::Decoded d;
  const int li = vita49::decode(data, size, d) ? lane_of(d.stream_id) : -1;
  if (li < 0) {
    foreign_packets_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (d.type == vita49::PacketType::kContext) return;  // the format was read at start
  packets_.fetch_add(1, std::memory_order_relaxed);
  Lane& lane = lanes_[size_t(li)];
  uint64_t missing = 0;
  if (lane.next_count >= 0 && d.packet_count != lane.next_count) {
    missing = uint64_t((d.packet_count - lane.next_count) & 0xF);
    packets_lost_.fetch_add(missing, std::memory_order_relaxed);
  }
  lane.next_count = (d.packet_count + 1) & 0xF;
  const size_t n = d.samples * 4 / bytes_per_sample_;
  if (n == 0) return;
  const double rate = spec_.rate_hz;
  if (!anchored_) {
    anchored_ = true;
    picoseconds_ = d.tsi == 1 && d.tsf == 2;
    origin_ps_ = picoseconds_ ? packet_ps(d) : __int128(utc_now_ns()) * 1000;
    origin_mono_ns_ = now - frames_to_ns(n, rate);
  }
  int64_t first;
  if (picoseconds_) {
    if (!(d.tsi == 1 && d.tsf == 2)) {
      foreign_packets_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    first = frames_at(packet_ps(d) - origin_ps_, rate);
  } else {  // no timestamps to go by: after the stream's last packet (and the ones missing)
    first = int64_t(lane.started ? lane.filled_to + missing * n : next_frame_);
  }
  if (first + int64_t(n) <= 0) {
    late_packets_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t skip = first < 0 ? uint64_t(-first) : 0;
  const uint64_t frame = uint64_t(first) + skip;
  // Where frame 0 was due here: it follows the least delayed packets, and slowly a sender whose
  // clock runs slower than ours (so that a chunk's wait is measured from when it could come).
  const int64_t due = now - frames_to_ns(frame + n, rate);
  origin_mono_ns_ = due < origin_mono_ns_ ? due : origin_mono_ns_ + (due - origin_mono_ns_) / 64;
  put(lane, frame, d.payload + skip * bytes_per_sample_, n - skip);
}

int Vita49Source::receive(int timeout_ms) noexcept {
  pollfd p{fd_, POLLIN, 0};
  const int r = poll(&p, 1, timeout_ms);
  if (r < 0) return errno == EINTR ? 0 : -1;
  if (r == 0) return 0;
  for (size_t i = 0; i < kBatch; ++i) {
    msgs_[i].msg_hdr.msg_control = controls_[i].data();
    msgs_[i].msg_hdr.msg_controllen = kControlBytes;
  }
  const int n = recvmmsg(fd_, msgs_.data(), unsigned(kBatch), MSG_DONTWAIT, nullptr);
  if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
  const int64_t now = mono_now_ns();
  for (int i = 0; i < n; ++i) {
    msghdr& h = msgs_[size_t(i)].msg_hdr;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
        uint32_t total;
        std::memcpy(&total, CMSG_DATA(c), sizeof total);
        if (total != last_kernel_drops_)
          kernel_drops_.fetch_add(uint32_t(total - last_kernel_drops_), std::memory_order_relaxed);
        last_kernel_drops_ = total;
      }
    take(buffers_.data() + size_t(i) * kDatagramBytes, msgs_[size_t(i)].msg_len, now);
  }
  return n;
}

// The next chunk, when every stream has its frames, or the wait is over and some stream does.
bool Vita49Source::deliver(Chunk& chunk, bool deadline_passed, int64_t now) noexcept {
  while (hole_count_ && holes_[0].from <= next_frame_) {  // frames lost: the chunk starts after them
    if (holes_[0].to > next_frame_) {
      lost_pending_ += holes_[0].to - next_frame_;
      next_frame_ = holes_[0].to;
    }
    std::copy(holes_ + 1, holes_ + hole_count_, holes_);
    --hole_count_;
  }
  uint64_t end = next_frame_ + spec_.chunk_frames;
  if (hole_count_ && holes_[0].from < end) end = holes_[0].from;  // it ends where frames were lost
  bool all = true, any = false;
  for (const Lane& l : lanes_) {
    all = all && l.filled_to >= end;
    any = any || (l.started && l.filled_to > next_frame_);
  }
  if (!all) {
    if (!deadline_passed || !any) return false;
    // Past the wait: the chunk goes as far as the furthest stream came (all of them stopping
    // together ends it short, with no zeros); a stream silent before that is zeros, counted.
    uint64_t furthest = next_frame_;
    for (const Lane& l : lanes_) furthest = std::max(furthest, l.filled_to);
    end = std::min(end, furthest);
    for (Lane& l : lanes_) {
      if (l.filled_to >= end) continue;
      const uint64_t from = std::max(l.filled_to, next_frame_);
      for (uint64_t f = from; f < end; ++f) std::memset(&l.ring[(f % ring_frames_) * bytes_per_sample_], 0, bytes_per_sample_);
      missing_samples_.fetch_add(end - from, std::memory_order_relaxed);
      l.filled_to = end;
      l.silent = true;
    }
  }
  const uint32_t frames = uint32_t(end - next_frame_), b = bytes_per_sample_, channels = spec_.channels;
  if (size_t(frames) * channels * b > chunk.capacity_bytes) return false;
  auto* dst = reinterpret_cast<uint8_t*>(chunk.data);
  for (uint64_t f = next_frame_; f < end; ++f) {
    const size_t at = size_t(f % ring_frames_) * b;
    for (uint32_t c = 0; c < channels; ++c, dst += b) std::memcpy(dst, &lanes_[c].ring[at], b);
  }
  ChunkHeader& h = chunk.header;
  h.first_frame = next_frame_;
  h.frames = frames;
  h.channels = channels;
  h.format = format_.format;
  h.t_first_utc_ns = int64_t((origin_ps_ + frames_to_ps(next_frame_, spec_.rate_hz)) / 1000);
  h.t_capture_mono_ns = now;
  if (lost_pending_) {
    h.flags |= chunk_flags::kOverrunBefore | chunk_flags::kSourceOverrun;
    h.frames_lost_before += lost_pending_;
    frames_lost_.fetch_add(lost_pending_, std::memory_order_relaxed);
    losses_.fetch_add(1, std::memory_order_relaxed);
    lost_pending_ = 0;
  }
  next_frame_ = end;
  started_ = true;
  down_.store(std::any_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.silent; }),
              std::memory_order_relaxed);
  return true;
}

ReadStatus Vita49Source::read(Chunk& chunk) noexcept {
  const int64_t wait_ns = int64_t(spec_.max_wait_s * 1e9);
  const int64_t give_up = mono_now_ns() + 100'000'000;  // back to the capture loop (its stop flag)
  for (;;) {
    const int64_t now = mono_now_ns();
    int timeout_ms = 10;
    if (anchored_) {
      const int64_t due = origin_mono_ns_ + frames_to_ns(next_frame_ + spec_.chunk_frames, spec_.rate_hz) + wait_ns;
      if (deliver(chunk, now >= due, now)) return ReadStatus::kOk;
      if (now < due) timeout_ms = int(std::min<int64_t>((due - now) / 1'000'000 + 1, 100));
      else down_.store(true, std::memory_order_relaxed);  // past the wait and nothing from any stream
    }
    if (now >= give_up) return ReadStatus::kIdle;
    if (receive(timeout_ms) < 0) return ReadStatus::kError;
  }
}

}  // namespace vigil
