#include "stages/ae_locate_stage.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace vigil {

AeLocateStage::AeLocateStage(AeLocateSettings settings)
    : settings_(std::move(settings)), geometry_(settings_.geometry) {}

StreamFormat AeLocateStage::prepare(const StreamFormat& in, uint32_t /*max_frames*/) {
  if (geometry_.sensors.size() != in.channels)
    throw std::invalid_argument("ae_locate: the geometry has " + std::to_string(geometry_.sensors.size()) +
                                " sensors, but its hits come from " + std::to_string(in.channels) +
                                " channels (one sensor a channel, in channel order)");
  rate_hz_ = in.rate_hz;
  // Arrivals are whole samples: a time difference within one sample of the spacing is the spacing.
  if (!settings_.timing_uncertainty_set) geometry_.timing_uncertainty_s = 1.0 / rate_hz_;
  settle_frames_ = uint64_t(std::ceil(settings_.hits_settle_s * rate_hz_)) + 1;
  builder_ = std::make_unique<AeEventBuilder>(ae_event_definition_s(geometry_), geometry_.event_lockout_s);
  grid_ = AeClusterGrid(settings_.cluster_cell_m > 0 ? settings_.cluster_cell_m : 1.0);
  cluster_alarms_.reset();
  if (settings_.cluster_alarm) cluster_alarms_ = std::make_unique<AeClusterAlarms>(*settings_.cluster_alarm, rate_hz_);
  pending_.clear();
  settled_to_ = 0;
  StreamFormat out;
  out.rate_hz = in.rate_hz;
  out.channels = in.channels;
  out.bands = 0;
  return out;
}

StageStatus AeLocateStage::process(const Block& /*in*/, Block& /*out*/, const Exec& /*exec*/) noexcept {
  return StageStatus::kOk;  // the work is the output thread's (take_hit, advance)
}

void AeLocateStage::take_hit(const EventRecord& hit, const nlohmann::json& fields) {
  if (hit.kind != EventKind::kAeHit || hit.band != 0 || !builder_) return;
  hits_.fetch_add(1, std::memory_order_relaxed);
  Pending p;
  p.frame = hit.frame;
  p.arrival.channel = hit.channel;
  p.arrival.time_s = double(hit.frame) / rate_hz_;
  p.arrival.amplitude = fields.value("amplitude_db", 0.0);
  p.arrival.energy = fields.value("energy_eu", 0.0);
  ref_frame_ = hit.frame;
  ref_utc_ns_ = hit.t_utc_ns;
  if (hit.frame < settled_to_) {  // later than the input stage can emit a hit: cannot be ordered in
    late_hits_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // In arrival order (hits of one chunk come lane by lane); equal arrivals keep their order.
  const auto at = std::upper_bound(pending_.begin(), pending_.end(), p.frame,
                                   [](uint64_t f, const Pending& q) { return f < q.frame; });
  pending_.insert(at, p);
}

void AeLocateStage::advance(uint64_t frame_end, std::vector<Located>& events) {
  if (!builder_) return;
  const bool end = frame_end == std::numeric_limits<uint64_t>::max();
  const uint64_t settled = end ? frame_end : (frame_end > settle_frames_ ? frame_end - settle_frames_ : 0);
  if (settled <= settled_to_ && !end) return;
  settled_to_ = std::max(settled_to_, settled);
  closed_.clear();
  size_t n = 0;
  while (n < pending_.size() && pending_[n].frame < settled) builder_->add(pending_[n++].arrival, closed_);
  pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(n));
  builder_->flush(end ? std::numeric_limits<double>::infinity() : double(settled) / rate_hz_, closed_);
  lockout_hits_.store(builder_->lockout_hits(), std::memory_order_relaxed);
  repeated_channel_hits_.store(builder_->repeated_channel_hits(), std::memory_order_relaxed);
  for (const AeEventHits& e : closed_) events.push_back(describe(e));
  if (cluster_alarms_) judge_clusters(end ? last_event_frame_ : settled, events);
}

int64_t AeLocateStage::utc_ns_of(uint64_t frame) const {
  return ref_utc_ns_ + int64_t(std::llround((double(frame) - double(ref_frame_)) / rate_hz_ * 1e9));
}

void AeLocateStage::judge_clusters(uint64_t frame, std::vector<Located>& events) {
  if (const uint64_t acks = ack_requests_.load(std::memory_order_relaxed); acks != acks_seen_) {
    acks_seen_ = acks;
    cluster_alarms_->acknowledge();
  }
  changes_.clear();
  cluster_alarms_->evaluate(frame, changes_);
  const AeClusterAlarmSettings& a = *settings_.cluster_alarm;
  const double cell_m = settings_.cluster_cell_m;
  for (const AeClusterAlarms::Change& c : changes_) {
    const AlarmTransition& t = c.transition;
    const bool raised = t.to > t.from;
    if (raised) cluster_alarms_raised_.fetch_add(1, std::memory_order_relaxed);
    Located out;
    out.type = "alarm";
    out.frame = t.cross_frame;
    out.t_utc_ns = utc_ns_of(t.cross_frame);
    out.body = {{"state", raised ? "raised" : "cleared"},
                {"rule", "cluster"},
                {"metric", to_string(a.metric)},
                {"level", to_string(t.to)},
                {"from", to_string(t.from)},
                {"value", t.value},
                {"threshold", t.threshold},
                {"window_s", a.window_s},
                {"cell", {c.cell.first, c.cell.second}},
                {"cell_m", cell_m},
                {"x_m", (double(c.cell.first) + 0.5) * cell_m},  // the cell's centre
                {"y_m", (double(c.cell.second) + 0.5) * cell_m}};
    events.push_back(std::move(out));
  }
  cells_in_alarm_.store(cluster_alarms_->cells_raised(), std::memory_order_relaxed);
}

AeLocateStage::Located AeLocateStage::describe(const AeEventHits& event) {
  events_.fetch_add(1, std::memory_order_relaxed);
  const AeLocation loc = locate_ae_event(geometry_, event);
  Located out;
  const AeArrival& first = event.hits.front();
  out.frame = uint64_t(std::llround(first.time_s * rate_hz_));
  out.t_utc_ns = utc_ns_of(out.frame);
  last_event_frame_ = std::max(last_event_frame_, out.frame);
  nlohmann::json& b = out.body;
  nlohmann::json channels = nlohmann::json::array(), amplitudes = nlohmann::json::array(),
                 arrivals = nlohmann::json::array();
  double energy = 0;
  for (const AeArrival& h : event.hits) {
    channels.push_back(h.channel);
    amplitudes.push_back(h.amplitude);
    arrivals.push_back(std::round((h.time_s - first.time_s) * 1e9) / 1e3);  // to the nanosecond
    energy += h.energy;
  }
  b["located"] = loc.located;
  if (loc.located) {
    located_.fetch_add(1, std::memory_order_relaxed);
    b["x_m"] = loc.position.x;
    b["y_m"] = loc.position.y;
    b["z_m"] = loc.position.z;
    b["residual_m"] = loc.residual_m;
    b["residual_us"] = loc.residual_s * 1e6;
    b["inside"] = loc.inside;
    if (!loc.inside) outside_.fetch_add(1, std::memory_order_relaxed);
  } else {
    not_locatable_.fetch_add(1, std::memory_order_relaxed);
    b["why_not"] = loc.why_not;
  }
  b["location"] = geometry_.kind == AeLocationKind::kLinear ? "linear" : "planar";
  b["hits"] = event.hits.size();
  b["hits_used"] = loc.hits_used;
  b["first_channel"] = first.channel;
  b["channels"] = std::move(channels);
  b["amplitudes_db"] = std::move(amplitudes);
  b["arrivals_us"] = std::move(arrivals);  // after the first hit's
  b["energy_eu"] = energy;
  if (loc.located && settings_.cluster_cell_m > 0) {
    const AeClusterGrid::Key cell = grid_.add(loc.position, energy);
    const AeClusterGrid::Cell& c = grid_.cells().at(cell);
    b["cluster"] = {{"cell", {cell.first, cell.second}},
                    {"cell_m", settings_.cluster_cell_m},
                    {"events", c.events},
                    {"energy_eu", c.energy}};
    if (cluster_alarms_) cluster_alarms_->add(cell, out.frame, energy);
  }
  return out;
}

void AeLocateStage::add_status(nlohmann::json& status) const {
  status["hits"] = hits_.load(std::memory_order_relaxed);
  status["events"] = events_.load(std::memory_order_relaxed);
  status["located"] = located_.load(std::memory_order_relaxed);
  status["not_locatable"] = not_locatable_.load(std::memory_order_relaxed);
  status["outside"] = outside_.load(std::memory_order_relaxed);
  status["lockout_hits"] = lockout_hits_.load(std::memory_order_relaxed);
  status["repeated_channel_hits"] = repeated_channel_hits_.load(std::memory_order_relaxed);
  status["late_hits"] = late_hits_.load(std::memory_order_relaxed);
  if (settings_.cluster_alarm) {
    status["cluster_alarms_raised"] = cluster_alarms_raised_.load(std::memory_order_relaxed);
    status["cells_in_alarm"] = cells_in_alarm_.load(std::memory_order_relaxed);
  }
}

}  // namespace vigil
