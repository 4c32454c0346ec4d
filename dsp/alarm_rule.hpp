// AlarmRule: alert and danger levels on one metric of one lane, evaluated once per measurement
// (e.g. per vibration window). Hysteresis: a level is entered at value >= its threshold and kept
// while value >= threshold - hysteresis. On-delay: a higher level is entered only after it has
// been indicated continuously for on_delay; off-delay likewise for a lower one. Latching: once
// raised, the level never falls until acknowledged. Plain data; no allocation.
#pragma once

#include <cstdint>
#include <optional>

namespace vigil {

struct AlarmRuleSettings {
  double alert = 0;          // threshold of level 1
  double danger = 0;         // threshold of level 2 (>= alert); 0 = no danger level
  double hysteresis = -1;    // < 0: 5 % of alert
  double on_delay_s = 0;
  double off_delay_s = 0;
  bool latch = false;
  bool operator==(const AlarmRuleSettings&) const = default;
};

enum class AlarmLevel : uint8_t { kNormal = 0, kAlert = 1, kDanger = 2 };
const char* to_string(AlarmLevel l) noexcept;

struct AlarmTransition {
  AlarmLevel from = AlarmLevel::kNormal, to = AlarmLevel::kNormal;
  double value = 0;        // the measurement that completed the transition
  double threshold = 0;    // the threshold crossed (raise: the level's; fall: the level's minus hysteresis)
  uint64_t cross_frame = 0;  // frame of the measurement where the condition first held
};

class AlarmRuleState {
 public:
  // Throws std::invalid_argument for alert <= 0, danger in (0, alert), negative delays.
  explicit AlarmRuleState(const AlarmRuleSettings& s, double rate_hz);

  // One measurement `value` taken at stream frame `frame` (frames increase).
  std::optional<AlarmTransition> evaluate(double value, uint64_t frame) noexcept;
  // Releases a latched level: the next evaluations may lower it (subject to off-delay).
  void acknowledge() noexcept { acked_ = true; }
  void reset() noexcept;
  // New levels, hysteresis, delays or latching (already validated by a constructor), keeping the
  // current level; a change being timed restarts. RT-safe.
  void set_settings(const AlarmRuleSettings& s) noexcept;
  AlarmLevel level() const noexcept { return level_; }
  double threshold(AlarmLevel l) const noexcept { return l == AlarmLevel::kDanger ? s_.danger : s_.alert; }

 private:
  AlarmLevel indicated(double value) const noexcept;

  AlarmRuleSettings s_;
  double rate_hz_ = 0;
  uint64_t on_delay_frames_ = 0, off_delay_frames_ = 0;
  AlarmLevel level_ = AlarmLevel::kNormal;
  bool pending_ = false;      // a change away from level_ is being timed
  bool pending_up_ = false;
  uint64_t pending_since_ = 0;
  bool acked_ = false;
};

}  // namespace vigil
