#include "dsp/ae_cluster_alarm.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vigil {

const char* to_string(AeClusterMetric m) noexcept {
  return m == AeClusterMetric::kEnergyPerS ? "energy_per_s" : "events_per_s";
}

AeClusterAlarms::AeClusterAlarms(const AeClusterAlarmSettings& s, double rate_hz) : s_(s), rate_hz_(rate_hz) {
  if (!(s_.window_s > 0) || !std::isfinite(s_.window_s))
    throw std::invalid_argument("cluster alarm: window_s must be above 0, got " + std::to_string(s_.window_s));
  AlarmRuleState check(s_.levels, rate_hz);  // the rule's own checks
  window_frames_ = std::max<uint64_t>(1, uint64_t(std::llround(s_.window_s * rate_hz)));
}

void AeClusterAlarms::add(const AeClusterGrid::Key& cell, uint64_t frame, double energy) {
  auto it = cells_.find(cell);
  if (it == cells_.end()) it = cells_.emplace(cell, Cell{{}, 0, AlarmRuleState(s_.levels, rate_hz_)}).first;
  auto& w = it->second.window;
  // In frame order (events come nearly in order; one a little earlier goes to its place).
  auto at = w.end();
  while (at != w.begin() && std::prev(at)->first > frame) --at;
  w.insert(at, {frame, energy});
}

void AeClusterAlarms::evaluate(uint64_t frame, std::vector<Change>& changes) {
  frame = std::max(frame, last_frame_);
  last_frame_ = frame;
  for (auto it = cells_.begin(); it != cells_.end();) {
    Cell& c = it->second;
    // The window is (frame - window, frame]: an event counts for window_s after its arrival.
    while (!c.window.empty() && c.window.front().first + window_frames_ <= frame) c.window.pop_front();
    double sum = 0;
    for (const auto& [f, e] : c.window)
      if (f <= frame) sum += s_.metric == AeClusterMetric::kEnergyPerS ? e : 1.0;
    c.rate = sum / s_.window_s;
    if (auto t = c.rule.evaluate(c.rate, frame)) changes.push_back({it->first, *t});
    // A quiet cell at normal is forgotten (the grid keeps its counts): the map stays as large as
    // the cells active in the last window.
    if (c.window.empty() && c.rule.level() == AlarmLevel::kNormal) it = cells_.erase(it);
    else ++it;
  }
}

double AeClusterAlarms::rate(const AeClusterGrid::Key& cell) const {
  const auto it = cells_.find(cell);
  return it == cells_.end() ? 0.0 : it->second.rate;
}

void AeClusterAlarms::acknowledge() {
  for (auto& [key, c] : cells_) c.rule.acknowledge();
}

AlarmLevel AeClusterAlarms::level(const AeClusterGrid::Key& cell) const {
  const auto it = cells_.find(cell);
  return it == cells_.end() ? AlarmLevel::kNormal : it->second.rule.level();
}

size_t AeClusterAlarms::cells_raised() const {
  return size_t(std::count_if(cells_.begin(), cells_.end(),
                              [](const auto& kv) { return kv.second.rule.level() != AlarmLevel::kNormal; }));
}

}  // namespace vigil
