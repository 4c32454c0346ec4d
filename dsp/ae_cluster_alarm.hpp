// AeClusterAlarms: the alarm rule on AE clusters (issue 52). Per cell of the cluster grid, the
// rate of its located events (events per second, or their summed energy per second) over a
// sliding window, judged by the alarms' rule (dsp/alarm_rule: alert and danger levels,
// hysteresis, on- and off-delays, latching until acknowledged). A growing crack shows as one cell
// whose rate rises; scattered noise spreads over many cells and raises none.
// Pure logic on the caller's thread (the output thread's ae_locate stage); times in frames of the
// hits' stream.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "dsp/alarm_rule.hpp"
#include "dsp/ae_location.hpp"

namespace vigil {

enum class AeClusterMetric { kEventsPerS, kEnergyPerS };
const char* to_string(AeClusterMetric m) noexcept;

struct AeClusterAlarmSettings {
  AeClusterMetric metric = AeClusterMetric::kEventsPerS;
  double window_s = 10;  // the rate is over the events of the last window_s
  AlarmRuleSettings levels;
  bool operator==(const AeClusterAlarmSettings&) const = default;
};

class AeClusterAlarms {
 public:
  // Throws std::invalid_argument for a window not above 0 or levels the alarm rule refuses.
  AeClusterAlarms(const AeClusterAlarmSettings& s, double rate_hz);

  struct Change {
    AeClusterGrid::Key cell;
    AlarmTransition transition;
  };
  // A located event of `cell` at `frame` with its energy.
  void add(const AeClusterGrid::Key& cell, uint64_t frame, double energy);
  // Judges every cell with events in its window or a level above normal at `frame` (not before
  // any earlier call's); the level changes onto `changes`.
  void evaluate(uint64_t frame, std::vector<Change>& changes);
  // The cell's rate at the last evaluation's frame (0 for a cell never seen).
  double rate(const AeClusterGrid::Key& cell) const;
  // Releases every latched level (the next evaluation may lower it).
  void acknowledge();
  AlarmLevel level(const AeClusterGrid::Key& cell) const;
  size_t cells_raised() const;

 private:
  struct Cell {
    std::deque<std::pair<uint64_t, double>> window;  // frame, energy
    double rate = 0;
    AlarmRuleState rule;
  };
  AeClusterAlarmSettings s_;
  double rate_hz_;
  uint64_t window_frames_;
  uint64_t last_frame_ = 0;
  std::map<AeClusterGrid::Key, Cell> cells_;
};

}  // namespace vigil
