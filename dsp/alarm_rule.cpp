#include "dsp/alarm_rule.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace vigil {

const char* to_string(AlarmLevel l) noexcept {
  switch (l) {
    case AlarmLevel::kNormal: return "normal";
    case AlarmLevel::kAlert: return "alert";
    case AlarmLevel::kDanger: return "danger";
  }
  return "?";
}

AlarmRuleState::AlarmRuleState(const AlarmRuleSettings& s, double rate_hz) : s_(s), rate_hz_(rate_hz) {
  if (!(s_.alert > 0)) throw std::invalid_argument("alarm rule: alert must be > 0, got " + std::to_string(s_.alert));
  if (s_.danger != 0 && !(s_.danger >= s_.alert))
    throw std::invalid_argument("alarm rule: danger must be >= alert (" + std::to_string(s_.alert) + ") or 0, got " +
                                std::to_string(s_.danger));
  if (s_.hysteresis < 0) s_.hysteresis = 0.05 * s_.alert;
  if (s_.on_delay_s < 0 || s_.off_delay_s < 0) throw std::invalid_argument("alarm rule: delays must be >= 0");
  on_delay_frames_ = uint64_t(std::llround(s_.on_delay_s * rate_hz));
  off_delay_frames_ = uint64_t(std::llround(s_.off_delay_s * rate_hz));
}

void AlarmRuleState::set_settings(const AlarmRuleSettings& s) noexcept {
  s_ = s;
  if (s_.hysteresis < 0) s_.hysteresis = 0.05 * s_.alert;
  on_delay_frames_ = uint64_t(std::llround(s_.on_delay_s * rate_hz_));
  off_delay_frames_ = uint64_t(std::llround(s_.off_delay_s * rate_hz_));
  pending_ = false;
}

void AlarmRuleState::reset() noexcept {
  level_ = AlarmLevel::kNormal;
  pending_ = false;
  acked_ = false;
}

AlarmLevel AlarmRuleState::indicated(double value) const noexcept {
  // Levels at or below the current one are held down to threshold - hysteresis.
  auto holds = [&](AlarmLevel l, double thr) { return value >= (level_ >= l ? thr - s_.hysteresis : thr); };
  if (s_.danger > 0 && holds(AlarmLevel::kDanger, s_.danger)) return AlarmLevel::kDanger;
  if (holds(AlarmLevel::kAlert, s_.alert)) return AlarmLevel::kAlert;
  return AlarmLevel::kNormal;
}

std::optional<AlarmTransition> AlarmRuleState::evaluate(double value, uint64_t frame) noexcept {
  AlarmLevel want = indicated(value);
  if (want < level_ && s_.latch && !acked_) want = level_;
  if (want == level_) {
    pending_ = false;
    return std::nullopt;
  }
  const bool up = want > level_;
  if (!pending_ || pending_up_ != up) {
    pending_ = true;
    pending_up_ = up;
    pending_since_ = frame;
  }
  if (frame - pending_since_ < (up ? on_delay_frames_ : off_delay_frames_)) return std::nullopt;
  AlarmTransition t;
  t.from = level_;
  t.to = want;
  t.value = value;
  // Raise: the entered level's threshold. Fall: that of the level just above the one entered,
  // less the hysteresis.
  t.threshold = up ? threshold(want) : threshold(AlarmLevel(uint8_t(want) + 1)) - s_.hysteresis;
  t.cross_frame = pending_since_;
  level_ = want;
  pending_ = false;
  if (up || level_ == AlarmLevel::kNormal) acked_ = false;  // a new raise latches again
  return t;
}

}  // namespace vigil
