// RT: pipeline thread (process, acknowledge); output thread (describe_event, write_event).
#include "config/settings.hpp"
#include "stages/vibration_stage.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <nlohmann/json.hpp>

#include "core/spsc_queue.hpp"
#include "stages/event_record.hpp"
#include "wire/event_text.hpp"
#include "stages/event_time.hpp"

namespace vigil {

StreamFormat VibrationStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  analyzer_ = std::make_unique<VibrationAnalyzer>(settings_.analysis, in.rate_hz);
  channels_ = in.channels;
  delay_frames_ = in.delay_frames;
  rate_hz_ = in.rate_hz;
  const uint32_t lanes = in.bands * in.channels, window = analyzer_->window(), hop = analyzer_->hop();
  // Segments of gcd(window, hop) samples tile every window; beyond 64 per window (or under 64
  // samples each) merging them costs more than it saves: statistics from the ring then.
  constexpr uint32_t kMaxSegments = 64, kMinSegment = 64;
  const uint32_t g = std::gcd(window, hop);
  segment_ = window / g <= kMaxSegments && g >= kMinSegment ? g : 0;
  keep_samples_ = analyzer_->needs_samples() || segment_ == 0;
  lanes_.assign(lanes, Lane{});
  window_.assign(keep_samples_ ? window : 0, 0.0f);
  for (Lane& l : lanes_) {
    if (keep_samples_) l.ring.assign(size_t(window) + hop, 0.0f);
    if (segment_) l.segments.assign(window / segment_, Moments{});
    for (const VibrationRuleSettings& r : settings_.rules) l.rules.emplace_back(r.levels, in.rate_hz);
  }
  queue_.assign(lanes, 0);
  queue_head_ = queue_size_ = 0;
  // Every lane's window completes once per hop: spread them so that all are done within the
  // frames of one hop, one more per call for slack.
  per_call_ = uint32_t(std::ceil(double(lanes) * max_frames / hop)) + 1;
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
  const size_t ring = lane.ring.size(), w = analyzer_->window();
  const size_t first = keep_samples_ ? std::min(w, ring - lane.pending_start) : 0;
  const float* x = nullptr;
  if (analyzer_->needs_samples()) {
    // Unroll the ring from the window's oldest sample into time order (one lane at a time: the
    // copies are spread over the chunks as the analyses are).
    std::copy_n(lane.ring.begin() + lane.pending_start, first, window_.begin());
    std::copy_n(lane.ring.begin(), w - first, window_.begin() + first);
    x = window_.data();
  }
  VibrationStats stats;
  if (segment_)
    stats = lane.pending_stats;
  else if (x)
    stats = vibration_stats(x, w);
  else  // order does not matter to the statistics: the ring's two pieces as they lie
    stats = vibration_stats(lane.ring.data() + lane.pending_start, first, lane.ring.data(), w - first);
  analyzer_->analyze(stats, x, ev.vibration);
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

// Lane-local (lanes are pushed in parallel): the queue is filled after, in lane order.
void VibrationStage::complete_window(Lane& lane, uint64_t end_frame) noexcept {
  if (lane.completed++ == 0) lane.was_pending = lane.is_pending;
  if (keep_samples_) {
    const uint32_t ring = uint32_t(lane.ring.size());
    lane.pending_start = (lane.pos + ring - analyzer_->window()) % ring;
  }
  if (segment_) {
    Moments m;
    const auto count = uint32_t(lane.segments.size());
    for (uint32_t s = 0; s < count; ++s) m = merge(m, lane.segments[(lane.segment_pos + s) % count]);
    lane.pending_stats = stats_of(m);
  }
  lane.is_pending = true;
  lane.pending_end_frame = end_frame;
}

uint32_t VibrationStage::cut(uint32_t frames, uint32_t* starts, uint32_t max_runs) const noexcept {
  if (!sums_segments() || lanes_.empty()) return 0;
  const uint64_t seen = lanes_[0].seen;  // every lane has seen the same frames
  uint32_t runs = 0, i = 0;
  starts[0] = 0;
  while (i < frames) {
    if (runs == max_runs) return 0;
    i += uint32_t(std::min<uint64_t>(frames - i, segment_ - (seen + i) % segment_));
    starts[++runs] = i;
  }
  return runs;
}

// One lane's samples of a chunk, in runs that end where a segment or a window ends.
void VibrationStage::push(Lane& lane, const float* x, const Moments* given, uint32_t frames, const Exec& exec) noexcept {
  const uint64_t window = analyzer_->window(), hop = analyzer_->hop();
  uint32_t i = 0;
  while (i < frames) {
    uint64_t run = frames - i;
    if (segment_) {
      run = std::min<uint64_t>(run, segment_ - lane.seen % segment_);
    } else {
      const uint64_t due = lane.seen < window ? window : window + ((lane.seen - window) / hop + 1) * hop;
      run = std::min<uint64_t>(run, due - lane.seen);
    }
    const auto n = uint32_t(run);
    if (keep_samples_) {
      const auto ring = uint32_t(lane.ring.size());
      for (uint32_t done = 0; done < n;) {
        const uint32_t piece = std::min(n - done, ring - lane.pos);
        std::copy_n(x + i + done, piece, lane.ring.begin() + lane.pos);
        lane.pos = lane.pos + piece == ring ? 0 : lane.pos + piece;
        done += piece;
      }
    }
    if (segment_) lane.segment = merge(lane.segment, given ? *given++ : moments_of(x + i, n));
    lane.seen += n;
    i += n;
    if (segment_ && lane.seen % segment_ == 0) {
      lane.segments[lane.segment_pos] = lane.segment;
      lane.segment_pos = lane.segment_pos + 1 == lane.segments.size() ? 0 : lane.segment_pos + 1;
      lane.segment = Moments{};
    }
    if (lane.seen >= window && (lane.seen - window) % hop == 0)
      complete_window(lane, exec.chunk.first_frame + i - 1);
  }
}

StageStatus VibrationStage::process(const Block& in, Block&, const Exec& exec) noexcept {
  return run(in, nullptr, 0, exec);
}

StageStatus VibrationStage::process_moments(const Block& in, const Moments* moments, uint32_t runs,
                                            const Exec& exec) noexcept {
  return run(in, moments, runs, exec);
}

StageStatus VibrationStage::run(const Block& in, const Moments* given, uint32_t runs, const Exec& exec) noexcept {
  const uint32_t lanes = in.bands * in.channels;
  const uint32_t parts = given ? 1 : WorkerPool::parts_for(pool_, lanes);  // given: little left to split
  auto push_part = [&](uint32_t part) {
    const WorkerPool::Range r = WorkerPool::range(lanes, parts, part);
    for (uint32_t index = r.first; index < r.end; ++index)
      push(lanes_[index], given ? nullptr : in.lane(index / in.channels, index % in.channels),
           given ? given + size_t(index) * runs : nullptr, in.frames, exec);
  };
  if (parts > 1)
    pool_->run(parts, push_part);
  else
    push_part(0);
  // Queue the lanes whose window completed, in lane order; a window completed while the lane's
  // previous one still waited overwrote it (the lane stays queued once).
  for (uint32_t index = 0; index < lanes; ++index) {
    Lane& lane = lanes_[index];
    if (lane.completed == 0) continue;
    const uint32_t queued = lane.was_pending ? 0 : 1;
    windows_skipped_ += lane.completed - queued;
    if (queued) {
      queue_[(queue_head_ + queue_size_) % queue_.size()] = index;
      ++queue_size_;
    }
    lane.completed = 0;
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
    l.segment = Moments{};
    std::fill(l.segments.begin(), l.segments.end(), Moments{});
    l.segment_pos = 0;
    l.pending_start = 0;
    l.seen = 0;
    l.is_pending = false;
    l.completed = 0;
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

bool VibrationStage::apply_update(StageUpdate& update) noexcept {
  const auto& u = static_cast<VibrationUpdate&>(update);
  for (size_t r = 0; r < u.levels.size(); ++r) {
    settings_.rules[r].levels = u.levels[r];  // (describe_event reads only name and metric)
    for (Lane& l : lanes_) l.rules[r].set_settings(u.levels[r]);
  }
  return true;
}

void VibrationStage::acknowledge() noexcept {
  for (Lane& l : lanes_)
    for (AlarmRuleState& r : l.rules) r.acknowledge();
}

namespace {

// A vibration stage's event fields (metrics, or an alarm's edge), into either sink (JsonFields or
// EventText): one list for both. Each hop sends one metrics event per lane (S2: 256 every half
// second), so the output thread writes them as text.
template <class Sink>
void vibration_event_fields(const EventRecord& ev, const VibrationStageSettings& settings, double window_s, Sink& out) {
  const bool calibrated = settings.analysis.full_scale_v > 0 && settings.analysis.sensitivity_v_per_ms2 > 0;
  if (ev.kind == EventKind::kVibration) {
    out.field("units", calibrated ? "m/s^2" : "full scale");
    out.field("window_s", window_s);
    for (size_t m = 0; m < kVibrationMetricCount; ++m) {
      const double v = ev.vibration.value[m];
      if (!std::isnan(v)) out.field(to_string(VibrationMetric(m)), v);
    }
    if (ev.vibration.zone) out.field("iso_zone", std::string(1, ev.vibration.zone));
    return;
  }
  const VibrationRuleSettings& r = settings.rules.at(ev.rule);
  out.field("state", ev.kind == EventKind::kAlarmRaised ? "raised" : "cleared");
  out.field("rule", r.name);
  out.field("metric", to_string(r.metric));
  out.field("level", to_string(AlarmLevel(ev.level)));
  out.field("from", to_string(AlarmLevel(ev.from_level)));
  out.field("value", ev.value);
  out.field("threshold", ev.threshold);
}

}  // namespace

void VibrationStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  JsonFields fields{body};
  vibration_event_fields(ev, settings_, double(analyzer_->window()) / rate_hz_, fields);
}

bool VibrationStage::write_event(const EventRecord& ev, EventText& text) const {
  vibration_event_fields(ev, settings_, double(analyzer_->window()) / rate_hz_, text);
  return true;
}

}  // namespace vigil
