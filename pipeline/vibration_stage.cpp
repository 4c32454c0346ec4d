// RT: pipeline thread (process, acknowledge); output thread (describe_event).
#include "config/settings.hpp"
#include "pipeline/vibration_stage.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "acquisition/spsc_queue.hpp"
#include "pipeline/event_record.hpp"
#include "pipeline/event_time.hpp"

namespace vigil {

StreamFormat VibrationStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  analyzer_ = std::make_unique<VibrationAnalyzer>(settings_.analysis, in.rate_hz);
  channels_ = in.channels;
  delay_frames_ = in.delay_frames;
  rate_hz_ = in.rate_hz;
  const uint32_t lanes = in.bands * in.channels;
  lanes_.assign(lanes, Lane{});
  window_.assign(analyzer_->window(), 0.0f);
  for (Lane& l : lanes_) {
    l.ring.assign(size_t(analyzer_->window()) + analyzer_->hop(), 0.0f);
    for (const VibrationRuleSettings& r : settings_.rules) l.rules.emplace_back(r.levels, in.rate_hz);
  }
  queue_.assign(lanes, 0);
  queue_head_ = queue_size_ = 0;
  // Every lane's window completes once per hop: spread them so that all are done within the
  // frames of one hop, one more per call for slack.
  per_call_ = uint32_t(std::ceil(double(lanes) * max_frames / analyzer_->hop())) + 1;
  StreamFormat out;
  out.rate_hz = in.rate_hz;
  out.channels = in.channels;
  out.bands = 0;
  return out;
}

void VibrationStage::push_event(EventRecord& ev, const Exec& exec) noexcept {
  ev.stage = stage_index_;
  ev.t_utc_ns = input_frame_utc_ns(exec.chunk, ev.frame, rate_hz_);
  emit_event(exec, ev);
}

void VibrationStage::analyze(uint32_t lane_index, const Exec& exec) noexcept {
  Lane& lane = lanes_[lane_index];
  EventRecord ev;
  ev.kind = EventKind::kVibration;
  ev.band = uint16_t(lane_index / channels_);
  ev.channel = lane_index % channels_;
  ev.frame = stream_to_input_frame(lane.pending_end_frame, delay_frames_);
  // Unroll the ring from the window's oldest sample into time order (one lane at a time: the
  // copies are spread over the chunks as the analyses are).
  const size_t ring = lane.ring.size(), w = window_.size(), first = std::min(w, ring - lane.pending_start);
  std::copy_n(lane.ring.begin() + lane.pending_start, first, window_.begin());
  std::copy_n(lane.ring.begin(), w - first, window_.begin() + first);
  analyzer_->analyze(window_.data(), ev.vibration);
  lane.is_pending = false;
  const VibrationMetrics metrics = ev.vibration;
  push_event(ev, exec);
  for (size_t r = 0; r < lane.rules.size(); ++r) {
    const double v = metrics[settings_.rules[r].metric];
    if (std::isnan(v)) continue;
    const auto t = lane.rules[r].evaluate(v, lane.pending_end_frame);
    if (!t) continue;
    EventRecord a;
    a.kind = t->to > t->from ? EventKind::kAlarmRaised : EventKind::kAlarmCleared;
    a.band = uint16_t(lane_index / channels_);
    a.channel = lane_index % channels_;
    a.rule = uint16_t(r);
    a.level = uint8_t(t->to);
    a.from_level = uint8_t(t->from);
    a.value = t->value;
    a.threshold = t->threshold;
    a.frame = stream_to_input_frame(t->cross_frame, delay_frames_);
    push_event(a, exec);
  }
}

StageStatus VibrationStage::process(const Block& in, Block&, const Exec& exec) noexcept {
  const uint32_t window = analyzer_->window(), hop = analyzer_->hop(), ring = window + hop;
  for (uint32_t b = 0; b < in.bands; ++b) {
    for (uint32_t c = 0; c < in.channels; ++c) {
      const uint32_t index = b * channels_ + c;
      Lane& lane = lanes_[index];
      const float* x = in.lane(b, c);
      for (uint32_t i = 0; i < in.frames; ++i) {
        lane.ring[lane.pos] = x[i];
        lane.pos = lane.pos + 1 == ring ? 0 : lane.pos + 1;
        ++lane.seen;
        if (lane.seen < window || (lane.seen - window) % hop != 0) continue;
        if (lane.is_pending) {
          ++windows_skipped_;  // the older window is being overwritten; the lane stays queued once
        } else {
          queue_[(queue_head_ + queue_size_) % queue_.size()] = index;
          ++queue_size_;
        }
        lane.pending_start = (lane.pos + ring - window) % ring;
        lane.is_pending = true;
        lane.pending_end_frame = exec.chunk.first_frame + i;
      }
    }
  }
  for (uint32_t k = 0; k < per_call_ && queue_size_ > 0; ++k) {
    const uint32_t index = queue_[queue_head_];
    queue_head_ = (queue_head_ + 1) % queue_.size();
    --queue_size_;
    analyze(index, exec);
  }
  return StageStatus::kOk;
}

void VibrationStage::reset() noexcept {
  for (Lane& l : lanes_) {
    std::fill(l.ring.begin(), l.ring.end(), 0.0f);
    l.pos = 0;
    l.pending_start = 0;
    l.seen = 0;
    l.is_pending = false;
    for (AlarmRuleState& r : l.rules) r.reset();
  }
  queue_head_ = queue_size_ = 0;
}

namespace {
struct VibrationUpdate final : StageUpdate {
  std::vector<AlarmRuleSettings> levels;  // per rule
};
}  // namespace

StageUpdatePlan VibrationStage::plan_update(const StageSettings& next) const {
  const auto& n = std::get<VibrationStageSettings>(next.params);
  StageUpdatePlan plan;
  if (n == settings_) return plan;
  bool same_rules = n.rules.size() == settings_.rules.size();
  for (size_t r = 0; same_rules && r < n.rules.size(); ++r)
    same_rules = n.rules[r].name == settings_.rules[r].name && n.rules[r].metric == settings_.rules[r].metric;
  if (!(n.analysis == settings_.analysis) || !same_rules) {
    plan.structural = true;
    plan.why = "the analysis settings or the list of rules changed";
    return plan;
  }
  auto u = std::make_unique<VibrationUpdate>();
  for (const VibrationRuleSettings& r : n.rules) {
    AlarmRuleState check(r.levels, rate_hz_);  // validates (throws std::invalid_argument)
    u->levels.push_back(r.levels);
  }
  plan.update = std::move(u);
  return plan;
}

void VibrationStage::apply_update(StageUpdate& update) noexcept {
  const auto& u = static_cast<VibrationUpdate&>(update);
  for (size_t r = 0; r < u.levels.size(); ++r) {
    settings_.rules[r].levels = u.levels[r];  // (describe_event reads only name and metric)
    for (Lane& l : lanes_) l.rules[r].set_settings(u.levels[r]);
  }
}

void VibrationStage::acknowledge() noexcept {
  for (Lane& l : lanes_)
    for (AlarmRuleState& r : l.rules) r.acknowledge();
}

void VibrationStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  const bool calibrated = settings_.analysis.full_scale_v > 0 && settings_.analysis.sensitivity_v_per_ms2 > 0;
  if (ev.kind == EventKind::kVibration) {
    body["units"] = calibrated ? "m/s^2" : "full scale";
    body["window_s"] = double(analyzer_->window()) / rate_hz_;
    for (size_t m = 0; m < kVibrationMetricCount; ++m) {
      const double v = ev.vibration.value[m];
      if (!std::isnan(v)) body[to_string(VibrationMetric(m))] = v;
    }
    if (ev.vibration.zone) body["iso_zone"] = std::string(1, ev.vibration.zone);
    return;
  }
  const VibrationRuleSettings& r = settings_.rules.at(ev.rule);
  body["state"] = ev.kind == EventKind::kAlarmRaised ? "raised" : "cleared";
  body["rule"] = r.name;
  body["metric"] = to_string(r.metric);
  body["level"] = to_string(AlarmLevel(ev.level));
  body["from"] = to_string(AlarmLevel(ev.from_level));
  body["value"] = ev.value;
  body["threshold"] = ev.threshold;
}

}  // namespace vigil
