// OutputWorker: the output thread's body. Hands each processed chunk to every sink (sinks/: VITA
// 49 data, events; each output one sink), writes the stages' event records as JSON text once for
// all of them, writes the status events, and measures end-to-end latency and deadlines. Sending
// never waits (failures are counted).
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
#include "pipeline/graph.hpp"
#include "pipeline/metrics.hpp"
#include "sinks/output_slot.hpp"
#include "sinks/sink.hpp"
#include "stages/ae_locate_stage.hpp"
#include "stages/event_record.hpp"
#include "wire/datagram_batch.hpp"
#include "wire/event_json.hpp"

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
    // This life of the fleet outputs (their messages' ids): "" draws one (16 random hex digits).
    std::string run_id;
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
  // The logs of sinks with a thread of their own (a fleet output's), drained by vigild too.
  const std::vector<RtLog*>& sink_logs() const noexcept { return sink_logs_; }
  // Any thread: the stream layout sent in `start` and `status` events, from these settings (the
  // service calls it again after an in-place reload changed thresholds).
  void update_layout(const Settings& settings);

 private:
  // Sends the chunks waiting in full_slots_ from `first` on (at most kMaxTogether) to every sink:
  // where one sink alone takes chunks and can batch them (Sink::batches_chunks), their datagrams
  // are handed to the kernel once all are batched (or the batch is full), in one sendmmsg(2)
  // call, runs of equal datagrams as one GSO send; each chunk's latency counts to that call.
  // Returns the slots to the free queue.
  void send_slots(OutputSlot* first) noexcept;
  static constexpr size_t kMaxTogether = 8;  // as many chunks as QuietHandoff hands over in a row
  // The chunk's latency and its parts: taken by this thread at `started`, its last datagram sent at `done`.
  void account_sent(const OutputSlot& slot, int64_t started, int64_t done) noexcept;
  void send_event(std::string_view type, nlohmann::json body, int64_t utc_ns) noexcept;
  // To every sink. While the output thread drains the stages' events (batching_events_), a text
  // that fits a batch datagram is queued into event_batch_ instead, and flush_events() hands the
  // queue to each sink at once (sendmmsg(2) calls of up to 64 on UDP): a chunk's hundreds of AE
  // hits no longer cost a system call each. Anything sent directly flushes the queue first, so
  // every sink gets the events in their order. type: a string that outlives the pass.
  void send_event_text(std::string_view type, std::string_view text) noexcept;
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
  static const char* stage_event_type(EventKind kind) noexcept;  // "alarm", "ae_hit", ...
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

  const Graph& graph_;
  SpscQueue<OutputSlot*>& full_slots_;
  SpscQueue<OutputSlot*>& free_slots_;
  SpscQueue<EventRecord>& events_;
  Options options_;
  boost::asio::io_context io_;
  std::unique_ptr<WorkerPool> send_pool_;  // Options::send_threads > 1 (before the sinks: they use it)
  // The outputs, data outputs first, in the settings' order: the status lists them so.
  std::vector<std::unique_ptr<Sink>> sinks_;
  Sink* batching_sink_ = nullptr;  // the one sink that takes chunks, where it batches them (send_slots)
  size_t event_sinks_ = 0;         // sinks that take events: none, and no event is written
  // Per data output, for the layout: its stream's format, and whether it sends hit waveforms.
  std::vector<const StreamFormat*> data_formats_;
  std::vector<bool> data_hits_;
  EventEncoder encoder_;
  static constexpr size_t kEventBatchBytes = 2048;  // an AE hit's text is ~300 bytes
  DatagramBatch event_batch_;    // stage events queued for every sink (send_event_text)
  std::vector<std::string_view> event_types_;  // their types
  bool batching_events_ = false;
  int64_t pass_send_ns_ = 0;  // this pass over the events: time in flush_events (event_sends)
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
  std::vector<RtLog*> sink_logs_;
  mutable std::mutex layout_mutex_;  // status_json() only try_locks it
  nlohmann::json layout_;
  // Deadline misses by culprit: [0] waiting in the capture queue, [1] sending, [2 + i] stage i
  // (the longest of the three parts of the chunk's time).
  std::unique_ptr<std::atomic<uint64_t>[]> misses_by_;
  // Events sent by type: alarm, ae_hit, ae_level, vibration, ae_event.
  std::array<std::atomic<uint64_t>, 5> events_by_type_{};
  // AE location (stages/ae_locate_stage.hpp), done on this thread: per stage, the ae_locate stages
  // that read its hits; every ae_locate stage; where the stream stands for them (the end of the
  // last chunk sent in an earlier pass: every hit of it has been drained by now).
  std::vector<std::vector<AeLocateStage*>> locators_of_;
  std::vector<std::pair<uint16_t, AeLocateStage*>> locators_;
  uint64_t sent_frame_end_ = 0;
  std::vector<AeLocateStage::Located> located_;
  void locate_hit(const EventRecord& ev) noexcept;
  void advance_locators(uint64_t frame_end) noexcept;
};

}  // namespace vigil
