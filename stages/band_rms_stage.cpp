// RT: pipeline thread (process).
#include "config/settings.hpp"
#include "stages/band_rms_stage.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/spsc_queue.hpp"
#include "stages/event_record.hpp"
#include "stages/event_time.hpp"

namespace vigil {

StreamFormat BandRmsStage::prepare(const StreamFormat& in, uint32_t) {
  channels_ = in.channels;
  delay_frames_ = in.delay_frames;
  rate_hz_ = in.rate_hz;
  const auto window = uint64_t(std::max(1.0, std::round(settings_.window_s * in.rate_hz)));
  lanes_.assign(size_t(in.bands) * in.channels, Lane{WindowedRms(window)});
  StreamFormat out;
  out.rate_hz = in.rate_hz;
  out.channels = in.channels;
  out.bands = 0;
  return out;
}

void BandRmsStage::window_done(Lane& lane, uint32_t b, uint32_t c, double rms, uint32_t i, const Exec& exec) noexcept {
  lane.last = rms;
  const bool raise = !lane.raised && rms > settings_.threshold;
  const bool clear = lane.raised && rms < settings_.clear_threshold;
  if (!raise && !clear) return;
  lane.raised = raise;
  EventRecord ev;
  ev.kind = raise ? EventKind::kAlarmRaised : EventKind::kAlarmCleared;
  ev.stage = stage_index_;
  ev.band = uint16_t(b);
  ev.channel = c;
  ev.value = rms;
  ev.threshold = raise ? settings_.threshold : settings_.clear_threshold;
  // Report the input frame the window's last sample came from (the stream lags by delay).
  ev.frame = stream_to_input_frame(exec.chunk.first_frame + i, delay_frames_);
  ev.t_utc_ns = input_frame_utc_ns(exec.chunk, ev.frame, rate_hz_);
  emit_event(exec, ev);
}

StageStatus BandRmsStage::process(const Block& in, Block&, const Exec& exec) noexcept {
  for (uint32_t b = 0; b < in.bands; ++b) {
    for (uint32_t c = 0; c < in.channels; ++c) {
      Lane& lane = lanes_[size_t(b) * channels_ + c];
      lane.rms.push(in.lane(b, c), in.frames, [&](double rms, uint32_t i) { window_done(lane, b, c, rms, i, exec); });
    }
  }
  return StageStatus::kOk;
}

uint32_t BandRmsStage::cut(uint32_t frames, uint32_t* starts, uint32_t max_runs) const noexcept {
  if (lanes_.empty()) return 0;
  uint64_t to_end = lanes_[0].rms.remaining();  // every lane has seen the same frames
  const uint64_t window = lanes_[0].rms.window_frames();
  uint32_t runs = 0, i = 0;
  starts[0] = 0;
  while (i < frames) {
    if (runs == max_runs) return 0;
    const auto n = uint32_t(std::min<uint64_t>(frames - i, to_end));
    i += n;
    starts[++runs] = i;
    to_end = to_end - n == 0 ? window : to_end - n;
  }
  return runs;
}

StageStatus BandRmsStage::process_moments(const Block& in, const Moments* moments, uint32_t runs,
                                          const Exec& exec) noexcept {
  for (uint32_t b = 0; b < in.bands; ++b) {
    for (uint32_t c = 0; c < in.channels; ++c) {
      Lane& lane = lanes_[size_t(b) * channels_ + c];
      const Moments* m = moments + (size_t(b) * channels_ + c) * runs;
      uint32_t end = 0;
      for (uint32_t r = 0; r < runs; ++r) {
        end += uint32_t(m[r].n);
        // Sum of squares = M2 + n mean^2.
        lane.rms.add(m[r].m2 + m[r].n * m[r].mean * m[r].mean, uint64_t(m[r].n), end - 1,
                     [&](double rms, uint32_t i) { window_done(lane, b, c, rms, i, exec); });
      }
    }
  }
  return StageStatus::kOk;
}

void BandRmsStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  body["state"] = ev.kind == EventKind::kAlarmRaised ? "raised" : "cleared";
  body["rule"] = "band_rms";
  body["value"] = ev.value;
  body["threshold"] = ev.threshold;
}

namespace {
struct BandRmsUpdate final : StageUpdate {
  BandRmsSettings settings;
};
}  // namespace

StageUpdatePlan BandRmsStage::plan_update(const StageSettings& next) const {
  const auto& n = std::get<BandRmsSettings>(next.params);
  StageUpdatePlan plan;
  if (n == settings_) return plan;
  if (n.window_s != settings_.window_s) {
    plan.structural = true;
    plan.why = "window_s changed";
    return plan;
  }
  auto u = std::make_unique<BandRmsUpdate>();
  u->settings = n;
  plan.update = std::move(u);
  return plan;
}

bool BandRmsStage::apply_update(StageUpdate& update) noexcept {
  settings_ = static_cast<BandRmsUpdate&>(update).settings;  // thresholds: the next window on
  return true;
}

void BandRmsStage::reset() noexcept {
  for (Lane& l : lanes_) {
    l.rms.reset();
    l.raised = false;
    l.last = 0;
  }
}

}  // namespace vigil
