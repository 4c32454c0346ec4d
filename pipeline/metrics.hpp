// Counters shared between the pipeline and output threads and read by the status reporter.
// Each is written by one thread only; readers use relaxed loads.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/latency_histogram.hpp"
#include "sinks/sink.hpp"

namespace vigil {

struct PipelineCounters {
  std::atomic<uint64_t> chunks_processed{0};
  std::atomic<uint64_t> frames_processed{0};
  std::atomic<uint64_t> stage_failures{0};
  std::atomic<uint64_t> output_chunks_dropped{0};  // processed, but no free output slot
  std::atomic<uint64_t> output_frames_dropped{0};
  std::atomic<uint64_t> clipped_samples{0};
  std::atomic<uint64_t> non_finite_samples{0};
  std::atomic<uint64_t> events_dropped{0};         // event queue full
  std::atomic<uint64_t> clock_steps{0};            // chunks whose source's UTC time line followed a wall-clock step
  LatencyHistogram processing;                     // convert + graph, per chunk
  std::atomic<bool> shedding{false};               // optional stages skipped now
  std::atomic<uint64_t> shed_episodes{0};
  std::atomic<uint64_t> chunks_shed{0};            // chunks processed without the optional stages
  std::atomic<uint64_t> quiet_handoffs{0};         // handed to the output thread without waking it (QuietHandoff)
  std::atomic<uint64_t> look_ahead_chunks{0};      // taken and converted while the GPU ran the chunk before
  std::atomic<uint64_t> chunks_uploaded_in_parts{0};  // part of them on the GPU before they were complete
  std::atomic<uint64_t> frames_uploaded_in_parts{0};  // those parts' frames
  LatencyHistogram look_ahead_work;  // a GPU wait's offer that took a chunk ahead or uploaded a part: its time
};

// The output thread's: the sinks' (packets, bytes, events, errors) and the chunks'.
struct OutputCounters : SinkCounters {
  std::atomic<uint64_t> chunks_sent{0};
  std::atomic<uint64_t> frames_sent{0};
  std::atomic<uint64_t> deadline_misses{0};
  std::atomic<uint64_t> chunks_sent_together{0};   // sent in one call with the chunk after them (send_slots)
  LatencyHistogram end_to_end;                     // last frame captured -> chunk's packets sent
  // end_to_end's parts: captured -> taken by the pipeline; processed -> taken by the output thread;
  // taken by the output thread -> its packets sent (processing itself is PipelineCounters'):
  LatencyHistogram queued, handed_over, sending;
  LatencyHistogram event_passes;  // one pass of the output thread over the queued events: its time
  LatencyHistogram event_sends;   // of event_passes: the time in handing the events to the sockets
};

}  // namespace vigil
