// Vita49Source: receives VITA 49.2 signal data packets over UDP (a network digitizer, or another
// vigild's data output) and delivers them as chunks, one channel per stream.
//
// - Streams: a list of stream ids in channel order, or the first `channels` streams to appear.
// - Format from each stream's context packets (payload format: int16, int32 or float32, all
//   streams alike; sample rate: must be the configured rate_hz, which the stages were designed
//   for). The constructor waits for them (start_timeout_s); `format` in the spec stands in for a
//   sender that sends none.
// - Time: each packet's integer (UTC) and fractional (picosecond) timestamp places its samples on
//   one frame line shared by all streams (frame 0 at the first packet); the chunks' UTC times come
//   from that line. Without picosecond timestamps, a stream's packets follow each other and the
//   line starts at the arrival time.
// - Loss: a packet missing (the 4-bit packet count, or a hole in the timestamps) is frames lost on
//   every channel, as an ALSA overrun is: the chunk before the hole ends there, the next starts
//   after it with frames_lost_before and the overrun flags. A stream that falls silent: each chunk
//   waits max_wait_s past its due time, then goes with that stream's samples as 0 (counted in
//   missing_samples; down() while it stays silent). Packets that come after their frames went are
//   counted late and dropped.
// Thread: constructed on the main thread; read() on the capture thread (no allocation, no locks).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "acquisition/source.hpp"

struct mmsghdr;

namespace vigil {

struct Vita49SourceSpec {
  std::string listen_host = "0.0.0.0";  // an address of this machine, "::", or a multicast group
  uint16_t listen_port = 4991;
  std::string interface;                // multicast: where to join ("" the route's)
  std::vector<uint32_t> streams;        // stream ids in channel order; empty: the first `channels`
  uint32_t channels = 1;                // with streams given: their count
  double rate_hz = 0;                   // what the context packets must say
  uint32_t chunk_frames = 1024;
  double max_wait_s = 0.1;              // how long a chunk waits for a late stream
  double start_timeout_s = 10;          // for the streams and their context packets
  std::optional<SampleFormat> format;   // for senders without context packets
  int receive_buffer_bytes = 8 << 20;
  bool operator==(const Vita49SourceSpec&) const = default;
};

class Vita49Source final : public Source {
 public:
  // Binds, then waits for the streams and their context packets. Throws std::runtime_error naming
  // the address, the stream and what is wrong.
  explicit Vita49Source(Vita49SourceSpec spec);
  ~Vita49Source() override;
  Vita49Source(const Vita49Source&) = delete;
  Vita49Source& operator=(const Vita49Source&) = delete;

  SourceFormat format() const noexcept override { return format_; }
  std::string_view kind() const noexcept override { return "vita49"; }
  ReadStatus read(Chunk& chunk) noexcept override;
  uint64_t overruns() const noexcept override { return losses_.load(std::memory_order_relaxed); }
  bool down() const noexcept override { return down_.load(std::memory_order_relaxed); }
  std::vector<std::pair<const char*, uint64_t>> counts() const override;

  const std::vector<uint32_t>& streams() const noexcept { return ids_; }
  // What read() does with one datagram, and then whether the next chunk is ready (wait_over: as if
  // its wait had passed). For the fuzz target, with no socket in the way; capture thread only.
  void on_datagram(const uint8_t* data, size_t size, int64_t now_mono_ns) noexcept { take(data, size, now_mono_ns); }
  bool deliver_now(Chunk& chunk, bool wait_over, int64_t now_mono_ns) noexcept {
    return deliver(chunk, wait_over, now_mono_ns);
  }
  std::string describe() const;  // one line for the start log

 private:
  struct Lane {
    std::vector<uint8_t> ring;   // ring_frames_ samples of the stream, host order
    uint64_t filled_to = 0;      // frames [.., filled_to) are in (or went, or are a hole)
    bool started = false;
    bool silent = false;         // its last chunk went without it
    int next_count = -1;         // the packet count expected next
  };
  Vita49SourceSpec spec_;
  SourceFormat format_;
  std::vector<uint32_t> ids_;
  std::vector<Lane> lanes_;
  int fd_ = -1;
  uint64_t ring_frames_ = 0;
  uint32_t bytes_per_sample_ = 4;
  // Receiving: recvmmsg into preallocated buffers.
  std::vector<uint8_t> buffers_;
  std::vector<mmsghdr> msgs_;
  std::vector<struct iovec> iovs_;
  std::vector<std::vector<uint8_t>> controls_;
  // The frame line.
  bool anchored_ = false, picoseconds_ = false, started_ = false;
  __int128 origin_ps_ = 0;          // UTC picoseconds of frame 0
  int64_t origin_mono_ns_ = 0;      // when frame 0 was due here
  uint64_t next_frame_ = 0;         // the next chunk's first frame
  uint64_t lost_pending_ = 0;       // frames lost before the next chunk
  static constexpr size_t kMaxHoles = 64;
  struct Hole {
    uint64_t from, to;
  };
  Hole holes_[kMaxHoles];           // frames lost on some stream, merged, ascending
  size_t hole_count_ = 0;
  std::atomic<bool> down_{false};
  std::atomic<uint64_t> packets_{0}, losses_{0}, packets_lost_{0}, frames_lost_{0}, missing_samples_{0},
      late_packets_{0}, foreign_packets_{0}, kernel_drops_{0};
  uint32_t last_kernel_drops_ = 0;

  void wait_for_streams();  // throws
  int lane_of(uint32_t stream_id) const noexcept;
  void take(const uint8_t* data, size_t size, int64_t now) noexcept;
  void put(Lane& lane, uint64_t frame, const uint8_t* samples, size_t n) noexcept;
  void add_hole(uint64_t from, uint64_t to) noexcept;
  int receive(int timeout_ms) noexcept;  // datagrams taken, -1 on error
  bool deliver(Chunk& chunk, bool deadline_passed, int64_t now) noexcept;
};

}  // namespace vigil
