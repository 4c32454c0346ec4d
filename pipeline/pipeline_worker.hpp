// PipelineWorker: the pipeline thread's body. Pops captured chunks, converts them to planar
// float, returns the chunk to the pool at once, runs the graph, and hands the requested streams
// to the output thread in a preallocated slot (dropped and counted when none is free, unless the
// source is unpaced: set_wait_for_output). While the next chunk is already waiting, a short chunk
// of an unpaced source is handed over without waking the output thread, which a later hand-off
// wakes (QuietHandoff).
// The look-ahead (Graph::look_ahead(): the first CUDA stage has a second staged input): while the
// GPU runs a chunk (between the two phases of a stage's GPU work: Graph::start, resume), the next
// one, when it is already waiting, is taken, converted into the other slot and its copy to the
// device started, so that two chunks are in flight; it is then processed as soon as this one is
// done. A chunk still runs alone when none waits (no latency is
// added), and no look-ahead is taken while a reload is pending (it applies between chunks).
// Raw input (Graph::take_raw_input): the chunk is not converted on the host but handed to the
// graph as captured, and given back to the capture thread once the graph has run.
// Uploads in parts (set_upload_in_parts, raw input with the look-ahead): while no chunk waits, the
// one being captured goes to the look-ahead's staged input part by part as the source publishes
// them (CaptureProgress); when it arrives only the rest is copied, and it runs as a look-ahead
// chunk would. Parts go up from the GPU waits of the chunk before and from the wait for the next.
#pragma once

#include <atomic>
#include <vector>

#include "acquisition/capture_loop.hpp"
#include "core/rt_log.hpp"
#include "dsp/sample_convert.hpp"
#include "stages/event_record.hpp"
#include "pipeline/graph.hpp"
#include "pipeline/metrics.hpp"
#include "sinks/output_slot.hpp"
#include "pipeline/quiet_handoff.hpp"
#include "pipeline/recorder.hpp"

namespace vigil {

class PipelineWorker {
 public:
  // stream_of_output: for each data output, the graph stream index it sends; decimation_of_output:
  // its decimation (only the kept samples go into the slot; empty: none decimates).
  PipelineWorker(Graph& graph, const SourceFormat& format, const CaptureLoop& capture,
                 SpscQueue<Chunk*>& full_chunks, SpscQueue<Chunk*>& free_chunks,
                 SpscQueue<OutputSlot*>& free_slots, SpscQueue<OutputSlot*>& full_slots,
                 SpscQueue<EventRecord>& events, std::vector<int> stream_of_output,
                 std::vector<uint32_t> decimation_of_output = {});

  // Thread: pipeline. Returns once the capture loop has finished and every chunk is processed.
  void run() noexcept;
  // Test-only fault: after this many nanoseconds of running, stop processing (chunks pile up
  // and are then dropped by the capture loop), as a hung GPU or stage would. 0: never.
  void set_stall_after_ns(int64_t ns) noexcept { stall_after_ns_ = ns; }
  // pipeline.busy_poll: wait for the next chunk spinning, never sleeping.
  void set_busy_poll(bool on) noexcept { busy_poll_ = on; }
  // An unpaced source (a file or synthetic source at rate_factor 0) has no clock to keep up with:
  // with this set, a chunk waits for a free output slot instead of being dropped, as the capture
  // loop waits for a free pool chunk, so an unpaced run loses nothing and goes at the pace of its
  // slowest thread, the output included.
  void set_wait_for_output(bool on) noexcept { wait_for_output_ = on; }
  // Before run(): upload each chunk in parts while it is captured (above), where the graph takes
  // its input raw with a look-ahead; returns whether it will (the capture loop must then publish
  // the progress: CaptureLoop::track_progress).
  bool set_upload_in_parts(bool on) noexcept {
    upload_parts_ = on && raw_ && graph_.look_ahead();
    return upload_parts_;
  }
  // Test-only load: each chunk takes at least cost_ns, for for_ns from the first chunk (0: always),
  // as a stage too slow for the rate would.
  void set_test_chunk_cost(int64_t cost_ns, int64_t for_ns) noexcept {
    chunk_cost_ns_ = cost_ns;
    chunk_cost_for_ns_ = for_ns;
  }
  // Overload policy: with `shed`, optional stages are skipped once 3 chunks in one second finish
  // after their deadline (capture + budget), and come back after restore_ns without a miss.
  void set_overload_policy(bool shed, int64_t budget_ns, int64_t restore_ns) noexcept {
    shed_policy_ = shed;
    budget_ns_ = budget_ns;
    restore_ns_ = restore_ns;
  }
  // Any thread: latched alarms are released before the next chunk is processed.
  void request_acknowledge() noexcept { ack_requests_.fetch_add(1, std::memory_order_relaxed); }
  // Any thread: hands over a planned graph update, applied before the next chunk; false while a
  // previous one is still pending. applied_updates() counts those applied.
  bool post_update(Graph::Update* update) noexcept {
    Graph::Update* none = nullptr;
    return pending_update_.compare_exchange_strong(none, update, std::memory_order_acq_rel);
  }
  uint64_t applied_updates() const noexcept { return applied_updates_.load(std::memory_order_acquire); }
  // The first stage the last applied update failed in (Graph::apply_update), or -1; read after
  // applied_updates() moved.
  int last_update_failed_stage() const noexcept { return last_update_failed_stage_.load(std::memory_order_acquire); }
  // The first input frame the last applied update acted on (read after applied_updates() moved).
  uint64_t last_update_frame() const noexcept { return last_update_frame_.load(std::memory_order_acquire); }
  bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
  const PipelineCounters& counters() const noexcept { return counters_; }
  RtLog& log() noexcept { return log_; }  // lines for the journal, drained by vigild
  // Before run(): every raw input chunk is also offered to this recorder (the `record:` output).
  void set_recorder(Recorder* recorder) noexcept { recorder_ = recorder; }

 private:
  // A chunk taken off the capture queue and converted into an input block.
  struct Taken {
    ChunkHeader header;
    uint64_t clipped = 0, non_finite = 0;
    int64_t t_taken = 0;
    Chunk* raw = nullptr;  // raw input: the chunk itself, held until the graph has run
  };
  void process(Chunk& chunk) noexcept;
  void take(Chunk& chunk, Block& in, Taken& taken) noexcept;  // converts it and gives the chunk back
  void run_taken(const Taken& taken, int64_t t0) noexcept;     // the graph, events and output slot
  // An event about the source at the chunk's first frame (counted as dropped when the queue is full).
  void push_source_event(EventKind kind, double value, const ChunkHeader& header) noexcept;
  void note_clock_step(const ChunkHeader& header) noexcept;  // counted, logged, an event
  // At a wait for a stage's GPU work (Graph::run): the next chunk, when one waits, taken ahead;
  // else the chunk being captured, its parts up so far.
  void look_ahead() noexcept;
  // A chunk off the capture queue: taken ahead when parts of it went up (below), else processed
  // as usual.
  void run_popped(Chunk& chunk) noexcept;
  // `chunk` into the next staged input with its upload started (the rest of it, where parts went
  // up): its turn comes at run()'s next pass.
  void take_ahead(Chunk& chunk) noexcept;
  // The chunk being captured: its frames published since the last call, to the device. Returns
  // whether it tried (a part to copy).
  bool upload_captured_parts() noexcept;
  // The frames of `chunk` that went up in parts into the next staged input (0: none).
  uint32_t parts_of(const Chunk& chunk) const noexcept;
  bool upload_parts_ = false;
  struct Parts {
    uint64_t generation = 0;  // CaptureProgress's for the chunk they belong to
    uint32_t frames = 0;      // its first frames, up (a copy enqueued)
    unsigned slot = 0;        // the staged input they went to
    bool failed = false;      // a part's copy could not be started: no more for this chunk
  };
  Parts parts_;
  uint64_t taken_generation_ = 0;  // of the last chunk taken: its parts are not to go up again
  bool has_ahead_ = false;  // a chunk taken by the look-ahead, in Graph::next_input_block()
  bool raw_ = false;        // Graph::raw_input()
  Taken ahead_;

  Graph& graph_;
  Recorder* recorder_ = nullptr;
  SourceFormat format_;
  const CaptureLoop& capture_;
  SpscQueue<Chunk*>& full_chunks_;
  SpscQueue<Chunk*>& free_chunks_;
  SpscQueue<OutputSlot*>& free_slots_;
  SpscQueue<OutputSlot*>& full_slots_;
  SpscQueue<EventRecord>& events_;
  std::vector<int> stream_of_output_;
  std::vector<uint32_t> decimation_of_output_;  // one per data output
  std::vector<ConvertCounts> convert_counts_;  // per part of the conversion, channels each
  // The per-chunk copying work split over the graph's pool when there is this much of it (samples).
  static constexpr uint64_t kSplitSamples = Graph::kSplitSamples;
  void convert(const Chunk& chunk, Block& in) noexcept;
  void fill_slot(OutputSlot& slot, uint32_t frames, uint64_t first_frame) noexcept;
  int64_t stall_after_ns_ = 0;
  bool busy_poll_ = false;
  QuietHandoff handoff_;  // whether a processed chunk goes to the output thread without a wake
  bool wait_for_output_ = false;
  int64_t chunk_cost_ns_ = 0, chunk_cost_for_ns_ = 0;
  int64_t t_first_chunk_ = 0;
  void watch_overload(int64_t t_done, int64_t t_capture, const Exec& exec) noexcept;
  bool shed_policy_ = false;
  int64_t budget_ns_ = 0, restore_ns_ = 0;
  int64_t window_start_ = 0, last_miss_ = 0;
  uint32_t misses_in_window_ = 0;
  RtLog log_;
  bool failing_ = false;  // the last chunk had a stage failure
  std::atomic<uint32_t> ack_requests_{0};
  std::atomic<Graph::Update*> pending_update_{nullptr};  // owned by the poster
  std::atomic<uint64_t> applied_updates_{0};
  std::atomic<uint64_t> last_update_frame_{0};
  std::atomic<int> last_update_failed_stage_{-1};
  uint32_t acks_done_ = 0;
  uint64_t output_lost_frames_ = 0;  // dropped for want of a slot since the last slot sent
  int64_t output_clock_step_ns_ = 0;  // wall-clock steps in those chunks (the next slot carries them)
  PipelineCounters counters_;
  std::atomic<bool> finished_{false};
};

}  // namespace vigil
