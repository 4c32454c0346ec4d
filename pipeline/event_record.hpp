// EventRecord: an event raised on the pipeline thread, as plain data (no strings, no allocation);
// the output thread turns it into JSON.
#pragma once

#include <cstdint>

namespace vigil {

enum class EventKind : uint8_t { kAlarmRaised, kAlarmCleared };

struct EventRecord {
  EventKind kind = EventKind::kAlarmRaised;
  uint16_t stage = 0;     // index into the graph's stages
  uint16_t band = 0;      // index into the stage input's band names
  uint32_t channel = 0;
  double value = 0;       // the measured value that crossed
  double threshold = 0;   // the level it crossed
  uint64_t frame = 0;     // index of the sample at which the window that crossed ended
  int64_t t_utc_ns = 0;   // that sample's UTC time
};

}  // namespace vigil
