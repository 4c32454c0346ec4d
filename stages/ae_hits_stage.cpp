// RT: pipeline thread (process); output thread (describe_event).
#include "config/settings.hpp"
#include "stages/ae_hits_stage.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/spsc_queue.hpp"
#include "stages/event_record.hpp"
#include "wire/event_text.hpp"
#include "stages/event_time.hpp"

namespace vigil {

size_t AeHitsStage::events_per_lane(const AeSampleParams& p, uint32_t frames) noexcept {
  const uint64_t hit_spacing = std::min(p.hdt, std::max<uint64_t>(p.max_duration, 1)) + p.hlt + 1;
  size_t n = size_t(frames / hit_spacing) + 2;
  if (p.level_interval) n += frames / p.level_interval + 2;
  return n;
}

std::vector<AeHitsStage::PartEvents> AeHitsStage::make_parts(const AeSampleParams& p) const {
  std::vector<PartEvents> parts;
  const uint32_t n = waveforms_ ? 1 : WorkerPool::parts_for(pool_, lanes_);
  if (n < 2) return parts;
  // Capped: a setting that allows a hit every few samples would otherwise reserve gigabytes;
  // beyond the cap events are counted as dropped, as on a full event queue.
  constexpr size_t kMaxEventsPerPart = 16384;
  for (uint32_t i = 0; i < n; ++i) {
    const WorkerPool::Range r = WorkerPool::range(lanes_, n, i);
    const size_t cap = std::min(kMaxEventsPerPart, events_per_lane(p, max_frames_) * (r.end - r.first));
    parts.push_back(PartEvents{std::vector<EventRecord>(cap), 0, 0});
  }
  return parts;
}

StreamFormat AeHitsStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  params_ = ae_sample_params(settings_, in.rate_hz);
  channels_ = in.channels;
  delay_frames_ = in.delay_frames;
  detector_ = std::make_unique<AeHitDetector>(params_, in.bands * in.channels);
  if (settings_.waveform_s > 0) {
    waveform_len_ = uint32_t(std::llround(settings_.waveform_s * in.rate_hz));
    pretrigger_ = uint32_t(std::llround(settings_.pretrigger_s * in.rate_hz));
    if (waveform_len_ < 1 || pretrigger_ >= waveform_len_ || waveform_len_ > (1u << 24))
      throw std::invalid_argument("ae_hits: the waveform must be 1 sample..2^24 samples long and longer than its pretrigger");
    waveforms_ = std::make_unique<WaveformChannel>(settings_.waveform_buffers, waveform_len_);
    captures_.assign(size_t(in.bands) * in.channels, Capture{std::vector<float>(pretrigger_, 0.0f), nullptr, 0});
  }
  lanes_ = in.bands * in.channels;
  max_frames_ = max_frames;
  parts_ = make_parts(params_);
  StreamFormat out;
  out.rate_hz = in.rate_hz;
  out.channels = in.channels;
  out.bands = 0;
  return out;
}

void AeHitsStage::start_capture(Capture& cap, uint32_t lane, uint64_t arrival, const float* x, uint64_t first,
                                const Exec& exec) noexcept {
  Waveform* w = nullptr;
  if (!cap.active) {
    w = cap.spare ? cap.spare : waveforms_->acquire();
    cap.spare = nullptr;
  }
  if (!w) {  // still capturing the previous hit on this lane, or the output thread is behind
    waveforms_dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  cap.start = arrival >= pretrigger_ ? arrival - pretrigger_ : 0;
  w->band = lane / channels_;
  w->channel = lane % channels_;
  w->first_frame = stream_to_input_frame(cap.start, delay_frames_);
  w->t_first_utc_ns = input_frame_utc_ns(exec.chunk, w->first_frame, params_.rate_hz);
  w->samples = 0;
  // The pretrigger: from this chunk where it reaches back no further, else from the history.
  for (uint64_t m = cap.start; m < arrival; ++m)
    w->data[w->samples++] = m >= first ? x[m - first] : cap.history[pretrigger_ - (first - m)];
  cap.active = w;
}

void AeHitsStage::continue_capture(Capture& cap, const float* x, uint32_t frames, uint64_t first) noexcept {
  Waveform* w = cap.active;
  uint64_t m = cap.start + w->samples;
  while (w->samples < waveform_len_ && m < first + frames) w->data[w->samples++] = x[m++ - first];
  if (w->samples == waveform_len_) {
    waveforms_->publish(w);
    waveforms_sent_.fetch_add(1, std::memory_order_relaxed);
    cap.active = nullptr;
  }
}

void AeHitsStage::fill_event(EventRecord& ev, uint32_t lane, uint64_t stream_frame, const Exec& exec) const noexcept {
  ev.stage = stage_index_;
  ev.band = uint16_t(lane / channels_);
  ev.channel = lane % channels_;
  ev.frame = stream_to_input_frame(stream_frame, delay_frames_);
  ev.t_utc_ns = input_frame_utc_ns(exec.chunk, ev.frame, params_.rate_hz);
}

void AeHitsStage::continue_from(const AeChannelState* lanes) noexcept {
  for (uint32_t l = 0; l < lanes_; ++l) detector_->set_state(l, lanes[l]);
}

template <typename Sink>
void AeHitsStage::push_lane(uint32_t lane, const Block& in, const Exec& exec, Sink&& sink) noexcept {
  auto emit = [&](EventRecord& ev, uint64_t stream_frame) {
    fill_event(ev, lane, stream_frame, exec);
    sink(ev);
  };
  const uint64_t first = exec.chunk.first_frame;
  const float* x = in.lane(lane / channels_, lane % channels_);
  Capture* cap = waveforms_ ? &captures_[lane] : nullptr;
  if (cap && cap->active) continue_capture(*cap, x, in.frames, first);
  detector_->push(
      lane, x, in.frames, first,
      [&](const AeHit& h) {
        EventRecord ev;
        ev.kind = EventKind::kAeHit;
        ev.hit = h;
        emit(ev, h.arrival_frame);
      },
      [&](const AeLevel& l) {
        EventRecord ev;
        ev.kind = EventKind::kAeLevel;
        ev.ae_level = l;
        emit(ev, l.end_frame);
      },
      [&](const AeHit& h) {
        if (!cap) return;
        start_capture(*cap, lane, h.arrival_frame, x, first, exec);
        if (cap->active) continue_capture(*cap, x, in.frames, first);
      });
  if (cap && pretrigger_ > 0) {  // keep the last `pretrigger` samples for the next chunk
    std::vector<float>& h = cap->history;
    if (in.frames >= pretrigger_) {
      std::copy(x + (in.frames - pretrigger_), x + in.frames, h.begin());
    } else {
      std::copy(h.begin() + in.frames, h.end(), h.begin());
      std::copy(x, x + in.frames, h.end() - in.frames);
    }
  }
}

StageStatus AeHitsStage::process(const Block& in, Block&, const Exec& exec) noexcept {
  const uint32_t lanes = in.bands * in.channels;
  if (parts_.empty()) {
    for (uint32_t lane = 0; lane < lanes; ++lane) push_lane(lane, in, exec, [&](const EventRecord& ev) { emit_event(exec, ev); });
    return StageStatus::kOk;
  }
  const uint32_t parts = uint32_t(parts_.size());
  auto run_part = [&](uint32_t p) {
    PartEvents& pe = parts_[p];
    pe.count = 0;
    const WorkerPool::Range r = WorkerPool::range(lanes, parts, p);
    for (uint32_t lane = r.first; lane < r.end; ++lane)
      push_lane(lane, in, exec, [&](const EventRecord& ev) {
        if (pe.count < pe.events.size())
          pe.events[pe.count++] = ev;
        else
          ++pe.overflow;
      });
  };
  pool_->run(parts, run_part);
  for (PartEvents& pe : parts_) {  // parts hold consecutive lanes: lane order, as one thread gives
    for (size_t i = 0; i < pe.count; ++i) emit_event(exec, pe.events[i]);
    if (pe.overflow && exec.events_dropped) exec.events_dropped->fetch_add(pe.overflow, std::memory_order_relaxed);
    pe.overflow = 0;
  }
  return StageStatus::kOk;
}

namespace {
struct AeHitsUpdate final : StageUpdate {
  AeSampleParams params;
  std::vector<AeHitsStage::PartEvents> parts;  // sized for the new times, made on the main thread
};
}  // namespace

StageUpdatePlan AeHitsStage::plan_update(const StageSettings& next) const {
  const auto& n = std::get<AeHitSettings>(next.params);
  StageUpdatePlan plan;
  if (n == settings_) return plan;
  // Threshold and timing change in place; what sets units, windows or buffers is structural.
  AeHitSettings same = n;
  same.threshold_db = settings_.threshold_db;
  same.floating_margin_db = settings_.floating_margin_db;
  same.hdt_s = settings_.hdt_s;
  same.pdt_s = settings_.pdt_s;
  same.hlt_s = settings_.hlt_s;
  same.max_duration_s = settings_.max_duration_s;
  if (!(same == settings_) || (n.floating_margin_db > 0) != (settings_.floating_margin_db > 0)) {
    plan.structural = true;
    plan.why = "the calibration, the floating window, the level interval or the waveform capture changed";
    return plan;
  }
  auto u = std::make_unique<AeHitsUpdate>();
  u->params = ae_sample_params(n, params_.rate_hz);
  u->parts = make_parts(u->params);
  plan.update = std::move(u);
  return plan;
}

bool AeHitsStage::apply_update(StageUpdate& update) noexcept {
  // params_ (read by describe_event on the output thread) keeps its calibration, which an
  // update cannot change; the detector takes the new thresholds and times.
  auto& u = static_cast<AeHitsUpdate&>(update);
  detector_->set_params(u.params);
  parts_.swap(u.parts);  // the old buffers leave with the update
  return true;
}

void AeHitsStage::add_status(nlohmann::json& status) const {
  if (!waveforms_) return;
  status["waveforms_captured"] = waveforms_sent_.load(std::memory_order_relaxed);
  status["waveforms_dropped"] = waveforms_dropped_.load(std::memory_order_relaxed);
}

void AeHitsStage::reset() noexcept {
  if (detector_) detector_->reset();
  for (Capture& c : captures_) {
    if (c.active) c.spare = c.active;
    c.active = nullptr;
    std::fill(c.history.begin(), c.history.end(), 0.0f);
  }
}

namespace {

// An AE event's own fields, into either sink (JsonFields or EventText): one list for both.
template <class Sink>
bool ae_event_fields(const EventRecord& ev, const AeSampleParams& params, Sink& out) {
  if (ev.kind == EventKind::kAeHit) {
    const AeHitFeatures f = ae_hit_features(ev.hit, params);
    out.field("amplitude_db", f.amplitude_db);
    out.field("threshold_db", f.threshold_db);
    out.field("rise_time_us", f.rise_time_s * 1e6);
    out.field("duration_us", f.duration_s * 1e6);
    out.field("counts", ev.hit.counts);
    out.field("counts_to_peak", ev.hit.counts_to_peak);
    out.field("energy_eu", f.energy_eu);
    out.field("signal_strength_pvs", f.signal_strength_pvs);
    out.field("rms_v", f.rms_v);
    out.field("truncated", ev.hit.truncated);
    return true;
  }
  if (ev.kind == EventKind::kAeLevel) {
    out.field("rms_v", ae_level_rms_v(ev.ae_level, params));
    out.field("asl_db", ae_level_asl_db(ev.ae_level, params));  // non-finite: null
    out.field("interval_s", double(ev.ae_level.samples) / params.rate_hz);
    return true;
  }
  return false;
}

}  // namespace

void AeHitsStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  JsonFields fields{body};
  ae_event_fields(ev, params_, fields);
}

bool AeHitsStage::write_event(const EventRecord& ev, EventText& text) const {
  return ae_event_fields(ev, params_, text);
}

}  // namespace vigil
