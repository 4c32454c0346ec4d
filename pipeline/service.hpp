// Service: builds the whole chain from Settings (source, pool, queues, graph, workers) and runs
// its three threads. Thread: constructed, started, stopped and joined from the main thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "acquisition/capture_loop.hpp"
#include "acquisition/chunk_pool.hpp"
#include "acquisition/source.hpp"
#include "config/settings.hpp"
#include "pipeline/graph.hpp"
#include "pipeline/health_monitor.hpp"
#include "pipeline/output_worker.hpp"
#include "pipeline/pipeline_worker.hpp"
#include "pipeline/recorder.hpp"

namespace vigil {

// pipeline.fft_wisdom -> the wisdom file to use, or "" for none: "off" none; "" the systemd cache
// directory's fftwf.wisdom ($CACHE_DIRECTORY, set by CacheDirectory=) when there is one.
std::string fft_wisdom_path(const std::string& setting);

class Service {
 public:
  // Builds and prepares everything; throws std::exception with what failed (no thread runs yet).
  explicit Service(const Settings& settings);
  ~Service();

  // Starts the threads; returns one line per real-time setting that could not be applied
  // (SCHED_FIFO, CPU affinity) — the service runs on without it — and per clock capped below its
  // maximum at start (HealthMonitor::start_notes).
  std::vector<std::string> start();
  // Stops capture; the pipeline and output threads drain what is in flight and finish.
  void request_stop() noexcept;
  // True once every thread has finished (the source ended or a stop was requested).
  bool finished() const noexcept;
  void join();
  // Releases latched alarms (before the next chunk). Any thread.
  void acknowledge_alarms() noexcept;
  // A reload, main thread. When `next` changes only coefficients and thresholds, applies them
  // between two chunks (filters crossfade; no sample lost or repeated) and returns true.
  // Otherwise returns false with `why` (the caller rebuilds the service). Throws when planning
  // fails (e.g. a filter design error).
  // `from_frame` (when given) gets the first input frame processed with the new settings.
  bool update(const Settings& next, std::string& why, uint64_t* from_frame = nullptr);
  // Any thread: an event the output thread sends with the others (e.g. `reload`).
  void post_event(const std::string& type, nlohmann::json body);
  const Settings& settings() const noexcept { return settings_; }
  // Main thread: hands every line the capture, pipeline, output and recorder threads logged to `sink`.
  template <typename Sink>
  void drain_logs(Sink&& sink) {
    RtLogRecord r;
    for (RtLog* log : {&capture_->log(), &pipeline_->log(), &output_->log(), recorder_ ? &recorder_->log() : nullptr})
      while (log && log->pop(r)) sink(int(r.level), r.text);
    for (RtLog* log : output_->sink_logs())
      while (log->pop(r)) sink(int(r.level), r.text);
  }
  // Event seq continuity over a rebuild: read after join(), set before start().
  uint64_t next_event_seq() const noexcept { return output_->next_event_seq(); }
  void set_next_event_seq(uint64_t seq) noexcept { output_->set_next_event_seq(seq); }

  nlohmann::json status_json() const;   // capture and pipeline fields of a status event
  nlohmann::json report() const;        // the whole status event body, output counters included
  // Chunks that have made it through the whole pipeline (to the end of the output thread, data
  // outputs or not): the watchdog's measure of progress. Any thread.
  uint64_t progress() const noexcept;
  // The capture device is gone and being retried (the service itself is healthy). Any thread.
  bool source_down() const noexcept { return source_->down(); }
  const std::string& backend() const noexcept { return backend_; }
  std::string describe() const;         // one line for the log
  std::string describe_outputs() const; // where each output goes, one line for the log
  // What the start should warn of: a recording that holds less than its header says (the source's).
  const std::vector<std::string>& source_warnings() const noexcept { return source_warnings_; }

 private:
  Settings settings_;
  std::string backend_;
  std::string memory_;        // cuda: how staging reaches the GPU (copy | mapped)
  std::string source_notes_;  // e.g. what an ALSA device granted
  std::vector<std::string> source_warnings_;
  std::vector<std::string> wisdom_notes_;  // FFTW wisdom loaded or not, saved or not: said at start()
  std::unique_ptr<Source> source_;
  SourceFormat format_;
  std::unique_ptr<ChunkPool> pool_;
  std::unique_ptr<SpscQueue<Chunk*>> free_chunks_, full_chunks_;
  std::vector<OutputSlot> slots_;
  std::unique_ptr<SpscQueue<OutputSlot*>> free_slots_, full_slots_;
  std::unique_ptr<SpscQueue<EventRecord>> events_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<CaptureLoop> capture_;
  std::unique_ptr<PipelineWorker> pipeline_;
  std::unique_ptr<OutputWorker> output_;
  std::unique_ptr<Recorder> recorder_;  // only with `record:`
  std::unique_ptr<HealthMonitor> health_;  // unless health.enabled is false
  std::thread capture_thread_, pipeline_thread_, output_thread_, recorder_thread_;
  std::atomic<bool> output_done_{false};
  std::vector<std::unique_ptr<Graph::Update>> unapplied_;  // posted but never taken (stalled pipeline)
};

}  // namespace vigil
