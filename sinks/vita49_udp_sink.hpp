// Vita49UdpSink: a data output. Sends one stream of the graph (or a detector's hit waveforms) as
// VITA 49 signal data packets over UDP, one stream id a lane, with context packets at start and
// every context_interval_s; packets one a datagram or in VRL frames (docs/PROTOCOL.md). Sending
// never waits: failures are counted by cause.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "config/settings.hpp"
#include "core/stream_format.hpp"
#include "sinks/receiver_watch.hpp"
#include "sinks/sink.hpp"
#include "wire/udp_sender.hpp"
#include "wire/vrl_frame.hpp"

namespace vigil {

struct ChunkHeader;

class RtLog;
class WaveformChannel;
class WorkerPool;

class Vita49UdpSink final : public Sink {
 public:
  struct Params {
    DataOutputSettings settings;
    uint32_t output_index = 0;            // in settings' data_outputs, and in each slot's data
    const StreamFormat* format = nullptr;  // lanes, rate and delay of what is sent (outlives the sink)
    WaveformChannel* waveforms = nullptr;  // hit waveforms; null: the slot's lanes
    double input_rate_hz = 0;              // the input's rate (frames to time)
  };
  // send_pool: threads that build and send a chunk's lanes with this one, each a contiguous range
  // of lanes through a socket of its own (null: this thread alone). Opens and resolves the sockets
  // now (throws std::runtime_error naming the destination).
  Vita49UdpSink(boost::asio::io_context& io, Params params, WorkerPool* send_pool, SinkCounters& counters,
                RtLog& log);
  ~Vita49UdpSink() override;

  void send_chunk(const OutputSlot& slot, bool flush_now) noexcept override;
  void flush() noexcept override { flush(0); }
  bool poll() noexcept override;  // hit waveforms
  void housekeeping(int64_t now_mono_ns) noexcept override { watch_.look(*sender_, now_mono_ns, log_); }
  SinkStatus describe() const override;
  bool batches_chunks() const noexcept override { return !params_.waveforms && !send_pool_; }

 private:
  // Sends n samples of one lane as data packets, the first stamped t_first_ps (UTC picoseconds).
  // rate_hz: the lane's sample rate as sent (the stream's, divided by the decimation). part:
  // which sender and batch (0: this thread's; the send pool's helpers theirs). first_flags:
  // chunk_flags kOverrunBefore and kClockStepped, said in the first packet's trailer.
  void send_lane(uint32_t band, uint32_t channel, const float* samples, size_t n, __int128 t_first_ps,
                 uint32_t first_flags, bool over_range, double rate_hz, uint32_t part = 0) noexcept;
  // The lanes of one chunk, over the send pool where there is one.
  void send_lanes(const OutputSlot& slot, size_t n, __int128 t_first_ps, uint32_t first_flags, bool clipped,
                  double rate_hz, bool flush_now) noexcept;
  void send_context(bool changed) noexcept;
  // Hands part's batched packets to its sender, counted as context packets or data packets.
  void flush(uint32_t part, bool context = false) noexcept;
  // framing: vrl. Puts a packet of at most `bytes` into part's open frame (ending the frame, and
  // flushing a full batch, when it does not fit); returns where to encode it and its room.
  uint8_t* frame_room(uint32_t part, size_t bytes, size_t& room) noexcept;
  void end_frame(uint32_t part) noexcept;  // commits part's open frame, if any
  DatagramBatch& batch_of(uint32_t part) noexcept { return *batches_[part]; }
  UdpSender& sender_of(uint32_t part) noexcept { return part ? *helpers_[part - 1] : *sender_; }

  Params params_;
  WorkerPool* send_pool_;
  SinkCounters& counters_;
  RtLog& log_;
  std::unique_ptr<UdpSender> sender_;  // this thread's (context packets, waveforms, lane part 0)
  std::vector<std::unique_ptr<UdpSender>> helpers_;      // lane parts 1.. (the send pool's)
  std::vector<std::unique_ptr<DatagramBatch>> batches_;  // per lane part
  std::vector<vrl::FrameWriter> frames_;                 // the open VRL frame of each part's batch
  std::vector<uint16_t> frame_counts_;                   // 12-bit VRL frame counter per part (per socket)
  std::vector<uint8_t> packet_counts_;                   // 4-bit counter per lane
  std::vector<uint8_t> context_counts_;
  std::vector<uint8_t> packet_;  // one context packet being built
  int64_t next_context_mono_ns_ = 0;
  int64_t last_utc_ns_ = 0;   // signal time of the newest chunk sent (context timestamps)
  // The time line in picoseconds: a chunk's time is whole nanoseconds (rounded down), so each is
  // placed on the line through the anchor chunk instead while it agrees to within that rounding.
  bool anchored_ = false;
  uint64_t anchor_frame_ = 0;
  __int128 anchor_ps_ = 0;
  __int128 chunk_time_ps(const ChunkHeader& h) noexcept;
  uint32_t flags_pending_ = 0;  // a loss or time step whose chunk kept no sample: goes on the next packet
  bool vrl_ = false;            // framing: vrl (packets go out in VRL frames)
  size_t datagram_bytes_ = 0;   // the largest datagram (a packet, or a frame of packets)
  ReceiverWatch watch_;
};

}  // namespace vigil
