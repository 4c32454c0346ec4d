// EventRecord: an event raised on the pipeline thread, as plain data (no strings, no allocation);
// the output thread turns it into JSON (Stage::describe_event adds the stage's own fields).
#pragma once

#include <cstdint>

#include "core/spsc_queue.hpp"
#include "dsp/ae_hit_detector.hpp"
#include "dsp/vibration_analyzer.hpp"
#include "stages/block.hpp"

namespace vigil {

// kOverload: the pipeline's own (stage unused): level 1 = shedding started, 0 = stages restored;
// value = deadline misses in the last second.
// kSourceOverrun: the device overran before this chunk; value = frames lost (measured).
// kBackendFallback: a CUDA stage failed and continues on its CPU twin; value = the cudaError_t.
// kClockStep: the wall clock stepped; value = seconds the time line moved (frame, t_utc_ns: the
// first frame on the new one).
enum class EventKind : uint8_t {
  kAlarmRaised, kAlarmCleared, kAeHit, kAeLevel, kVibration, kOverload, kSourceOverrun, kBackendFallback, kClockStep
};

struct EventRecord {
  EventKind kind = EventKind::kAlarmRaised;
  uint16_t stage = 0;     // index into the graph's stages
  uint16_t band = 0;      // index into the stage input's band names
  uint32_t channel = 0;
  double value = 0;       // alarms: the measured value that crossed
  double threshold = 0;   // alarms: the level it crossed
  uint64_t frame = 0;     // input frame the event refers to (alarms: the sample that crossed;
                          // hits: the arrival; levels: the interval's last sample)
  int64_t t_utc_ns = 0;   // that frame's UTC time
  uint16_t rule = 0;      // alarms: index of the stage's rule
  uint8_t level = 0;      // alarms: 0 normal, 1 alert, 2 danger (the level entered)
  uint8_t from_level = 0; // alarms: the level left
  AeHit hit;              // kAeHit (frames in stream samples)
  AeLevel ae_level;       // kAeLevel
  VibrationMetrics vibration;  // kVibration (frame: the window's last sample)
};

// A detector's event onto the pipeline's queue; never blocks: a full (or absent) queue counts it
// as dropped. RT-safe.
inline void emit_event(const Exec& exec, const EventRecord& ev) noexcept {
  if (!exec.events || !exec.events->push(ev)) {
    if (exec.events_dropped) exec.events_dropped->fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace vigil
