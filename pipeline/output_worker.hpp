// OutputWorker: the output thread's body. Turns output slots into VITA 49 data packets, event
// records into JSON datagrams, sends periodic context packets and status events, and measures
// end-to-end latency and deadlines. Sending never waits (failures are counted).
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "core/rt_log.hpp"
#include "core/worker_pool.hpp"
#include "wire/event_json.hpp"
#include "stages/event_record.hpp"
#include "pipeline/graph.hpp"
#include "pipeline/metrics.hpp"
#include "pipeline/output_slot.hpp"
#include "wire/udp_sender.hpp"
#include "wire/vrl_frame.hpp"

namespace vigil {

class OutputWorker {
 public:
  struct Options {
    double rate_hz = 0;
    int64_t deadline_budget_ns = 0;
    std::function<nlohmann::json()> status_fields;  // counters of the other threads
    std::function<bool()> upstream_finished;        // the pipeline thread has finished
    std::function<bool()> source_down;              // the capture device is gone (retrying)
    std::string source_kind;
    bool busy_poll = false;  // wait for the next chunk spinning, never sleeping
    // Threads that build and send a chunk's data packets, this one included: each takes a
    // contiguous range of an output's lanes (a lane always the same thread, through a socket of
    // its own), so a chunk of many lanes goes out in a fraction of the time on a machine with
    // cores to spare. Context packets, hit waveforms and events stay on this thread.
    uint32_t send_threads = 1;
  };

  // stream_of_output: graph stream index per data output. Opens and resolves every socket now
  // (throws std::runtime_error naming the output on failure).
  OutputWorker(const Settings& settings, const Graph& graph, std::vector<int> stream_of_output,
               SpscQueue<OutputSlot*>& full_slots, SpscQueue<OutputSlot*>& free_slots,
               SpscQueue<EventRecord>& events, Options options);
  ~OutputWorker();

  // Thread: output. Returns when upstream has finished and everything queued has been sent,
  // after a final status event.
  void run() noexcept;
  const OutputCounters& counters() const noexcept { return counters_; }
  nlohmann::json status_json(bool final_report) const;
  // Before run(): the first event's seq (a rebuilt service continues its predecessor's count).
  void set_next_event_seq(uint64_t seq) noexcept { encoder_.set_next_seq(seq); }
  // After run() has returned: the seq the next event would have had.
  uint64_t next_event_seq() const noexcept { return encoder_.next_seq(); }
  // Any thread: an event to send with the others (the output thread takes it within a pass).
  void post_event(const std::string& type, nlohmann::json body);
  RtLog& log() noexcept { return log_; }  // lines for the journal, drained by vigild
  // Any thread: the stream layout sent in `start` and `status` events, from these settings (the
  // service calls it again after an in-place reload changed thresholds).
  void update_layout(const Settings& settings);

 private:
  // Whether a destination answers "port unreachable" (no receiver): logged on each change.
  struct ReceiverWatch {
    bool absent = false;
    uint64_t refused_seen = 0;        // the sender's refusal count at the last look
    uint64_t datagrams_at_refusal = 0;
    int64_t last_refusal_ns = 0;
  };
  struct DataOutput {
    DataOutputSettings settings;
    std::unique_ptr<UdpSender> sender;  // this thread's (context packets, waveforms, lane part 0)
    std::vector<std::unique_ptr<UdpSender>> helpers;  // lane parts 1.. (Options::send_threads)
    int stream = -1;                  // graph sample stream, or -1 for hit waveforms:
    WaveformChannel* waveforms = nullptr;  // then these, of the detector's input lanes
    const StreamFormat* format = nullptr;  // lanes and rate of what is sent
    uint32_t output_index = 0;
    std::vector<uint8_t> packet_counts;  // 4-bit counter per lane
    std::vector<uint8_t> context_counts;
    int64_t next_context_mono_ns = 0;
    ReceiverWatch watch;
    uint32_t flags_pending = 0;    // a loss or time step whose chunk kept no sample: goes on the next packet
    bool vrl = false;              // framing: vrl (packets go out in VRL frames)
    size_t datagram_bytes = 0;     // the largest datagram (a packet, or a frame of packets)
    std::vector<uint16_t> frame_counts;  // 12-bit VRL frame counter per lane part (per socket)
  };
  struct EventOutput {
    EventOutputSettings settings;
    std::unique_ptr<UdpSender> sender;
    int64_t next_status_mono_ns = 0;
    ReceiverWatch watch;
    std::unique_ptr<DatagramBatch> lines;  // framing: lines: the queued events packed, one a line
  };
  // framing: lines: packs the queued events (event_batch_) into out's datagrams, in order.
  void pack_lines(EventOutput& out) noexcept;

  // Sends the chunks waiting in full_slots_ from `first` on (at most kMaxTogether): where their
  // datagrams can share a batch (sends_together()), they are sent once all are batched (or the
  // batch is full), in one sendmmsg(2) call, runs of equal datagrams as one GSO send; each chunk's
  // latency counts to that call. Returns the slots to the free queue.
  void send_slots(OutputSlot* first) noexcept;
  static constexpr size_t kMaxTogether = 8;  // as many chunks as QuietHandoff hands over in a row
  // One data output with its own stream, sent by this thread alone: its batch holds nothing else.
  bool sends_together() const noexcept;
  // The chunk's datagrams, batched; handed to the kernel at its end unless `flush_now` is false
  // (send_slots then does).
  void send_slot(const OutputSlot& slot, bool flush_now) noexcept;
  // The chunk's latency and its parts: taken by this thread at `started`, its last datagram sent at `done`.
  void account_sent(const OutputSlot& slot, int64_t started, int64_t done) noexcept;
  bool send_waveforms(DataOutput& out) noexcept;
  // Sends n samples of one lane as data packets, the first stamped t_first_ps (UTC picoseconds).
  // rate_hz: the lane's sample rate as sent (the stream's, divided by the output's decimation).
  // part: which sender and batch (0: this thread's; send_slot's helpers theirs). first_flags:
  // chunk_flags kOverrunBefore and kClockStepped, said in the first packet's trailer.
  void send_lane(DataOutput& out, uint32_t band, uint32_t channel, const float* samples, size_t n,
                 __int128 t_first_ps, uint32_t first_flags, bool over_range, double rate_hz,
                 uint32_t part = 0) noexcept;
  // The lanes of one chunk of a data output, over the send pool where there is one.
  void send_lanes(DataOutput& out, const OutputSlot& slot, size_t o, size_t n, __int128 t_first_ps,
                  uint32_t first_flags, bool clipped, double rate_hz, bool flush_now = true) noexcept;
  void send_context(DataOutput& out, bool changed) noexcept;
  // Hands out's batched data packets of lane part `part` to its sender (send_lane batches them),
  // counted as context packets or data packets.
  void flush(DataOutput& out, uint32_t part = 0, bool context = false) noexcept;
  // framing: vrl. Puts a packet of at most `bytes` into part's open frame (ending the frame, and
  // flushing a full batch, when it does not fit); returns where to encode it and its room.
  uint8_t* frame_room(DataOutput& out, uint32_t part, size_t bytes, size_t& room) noexcept;
  void end_frame(DataOutput& out, uint32_t part) noexcept;  // commits part's open frame, if any
  DatagramBatch& batch_of(uint32_t part) noexcept { return part ? *helper_batches_[part - 1] : batch_; }
  void send_event(const std::string& type, nlohmann::json body, int64_t utc_ns) noexcept;
  // To every event output, counted. While the output thread drains the stages' events
  // (batching_events_), a text that fits a batch datagram is queued into event_batch_ instead,
  // and flush_events() hands the queue to each output in sendmmsg(2) calls of up to 64: a chunk's
  // hundreds of AE hits no longer cost a system call each. Anything sent directly flushes the
  // queue first, so every output gets the events in their order.
  void send_event_text(std::string_view text) noexcept;
  void flush_events() noexcept;
  void send_event_record(const EventRecord& ev) noexcept;
  // What the pipeline queued, in passes of up to kEventsPerPass: a run of at least two parts'
  // worth of stage events (a chunk's AE hits from the GPU come by the thousand at once) is
  // formatted on the send pool, where there is one, and sent in order. Returns whether there was any.
  bool drain_events() noexcept;
  void send_stage_events_in_parallel(const EventRecord* ev, uint32_t n) noexcept;
  // A stage's event (not the pipeline's own: pipeline_event()) as text with the given seq, in
  // `text` or `json` (any thread; throws on allocation failure).
  std::string_view stage_event_text(const EventRecord& ev, EventText& text, std::string& json, uint64_t seq) const;
  static bool pipeline_event(EventKind kind) noexcept;
  void count_event(const EventRecord& ev) noexcept;  // events_by_type
  EventText event_text_;  // a stage event written as text (EventTextWriter::write_event), reused
  std::vector<const EventTextWriter*> text_writers_;  // per stage: its EventTextWriter part, or null
  std::string event_json_;  // or through a JSON body
  static constexpr uint32_t kEventsPerPass = 4096, kEventsPerPart = 32;
  std::vector<EventRecord> pass_events_;  // kEventsPerPass
  struct FormattedEvents {  // one send-pool part's events: their texts back to back
    EventText text;
    std::string json;
    std::string bytes;
    std::vector<uint32_t> ends;  // where each event's text ends in bytes
  };
  std::vector<FormattedEvents> formatted_;  // one per send-pool thread
  void housekeeping(bool final_report) noexcept;
  void watch_receiver(const UdpSender& sender, ReceiverWatch& watch, int64_t now) noexcept;

  const Graph& graph_;
  SpscQueue<OutputSlot*>& full_slots_;
  SpscQueue<OutputSlot*>& free_slots_;
  SpscQueue<EventRecord>& events_;
  Options options_;
  boost::asio::io_context io_;
  std::vector<DataOutput> data_;
  std::vector<EventOutput> event_outputs_;
  EventEncoder encoder_;
  std::vector<uint8_t> packet_;  // one datagram being built (context packets, events)
  DatagramBatch batch_;          // data packets of one output, sent together (flush)
  static constexpr size_t kEventBatchBytes = 2048;  // an AE hit's text is ~300 bytes
  DatagramBatch event_batch_;    // stage events queued for every event output (send_event_text)
  bool batching_events_ = false;
  int64_t pass_send_ns_ = 0;  // this pass over the events: time in flush_events (event_sends)
  std::vector<std::unique_ptr<DatagramBatch>> helper_batches_;  // the send pool's, lane parts 1..
  std::vector<vrl::FrameWriter> frames_;  // the open VRL frame of each lane part's batch
  std::unique_ptr<WorkerPool> send_pool_;  // Options::send_threads > 1
  int64_t last_utc_ns_ = 0;      // signal time of the newest chunk sent (context timestamps)
  // Set once in the constructor, before any thread runs: status_json() reads it from the main
  // thread while the output thread runs (a write in run() was a data race, found by TSan).
  const int64_t start_mono_ns_;
  // The first and the latest chunk out (account_sent, the output thread), and the first one's
  // frames: the rate out from the first chunk on, vigild's start-up left out (status frames_out_per_s).
  std::atomic<int64_t> first_out_mono_ns_{0}, last_out_mono_ns_{0};
  std::atomic<uint64_t> first_out_frames_{0};
  bool source_was_down_ = false;  // for one alarm per outage
  std::mutex posted_mutex_;  // the output thread only try_locks it
  std::vector<std::pair<std::string, nlohmann::json>> posted_;
  OutputCounters counters_;
  RtLog log_;
  mutable std::mutex layout_mutex_;  // status_json() only try_locks it
  nlohmann::json layout_;
  // Deadline misses by culprit: [0] waiting in the capture queue, [1] sending, [2 + i] stage i
  // (the longest of the three parts of the chunk's time).
  std::unique_ptr<std::atomic<uint64_t>[]> misses_by_;
  // Events sent by type: alarm, ae_hit, ae_level, vibration.
  std::array<std::atomic<uint64_t>, 4> events_by_type_{};
};

// Stream id of lane (band, channel) of data output `output_index` (see docs/PROTOCOL.md).
constexpr uint32_t stream_id(uint32_t output_index, uint32_t band, uint32_t channel) noexcept {
  return (output_index & 0xFF) << 24 | (band & 0xFFF) << 12 | (channel & 0xFFF);
}

}  // namespace vigil
