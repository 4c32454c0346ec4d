// RT: pipeline thread (process); output thread (describe_event).
#include "pipeline/ae_hits_stage.hpp"

#include <nlohmann/json.hpp>

#include "acquisition/spsc_queue.hpp"
#include "pipeline/event_record.hpp"
#include "pipeline/event_time.hpp"

namespace vigil {

StreamFormat AeHitsStage::prepare(const StreamFormat& in, uint32_t) {
  params_ = ae_sample_params(settings_, in.rate_hz);
  channels_ = in.channels;
  delay_frames_ = in.delay_frames;
  detector_ = std::make_unique<AeHitDetector>(params_, in.bands * in.channels);
  StreamFormat out;
  out.rate_hz = in.rate_hz;
  out.channels = in.channels;
  out.bands = 0;
  return out;
}

StageStatus AeHitsStage::process(const Block& in, Block&, const Exec& exec) noexcept {
  auto emit = [&](EventRecord& ev, uint32_t lane, uint64_t stream_frame) {
    ev.stage = stage_index_;
    ev.band = uint16_t(lane / channels_);
    ev.channel = lane % channels_;
    ev.frame = stream_to_input_frame(stream_frame, delay_frames_);
    ev.t_utc_ns = input_frame_utc_ns(exec.chunk, ev.frame, params_.rate_hz);
    if (!exec.events || !exec.events->push(ev)) {
      if (exec.events_dropped) exec.events_dropped->fetch_add(1, std::memory_order_relaxed);
    }
  };
  for (uint32_t b = 0; b < in.bands; ++b) {
    for (uint32_t c = 0; c < in.channels; ++c) {
      const uint32_t lane = b * channels_ + c;
      detector_->push(
          lane, in.lane(b, c), in.frames, exec.chunk.first_frame,
          [&](const AeHit& h) {
            EventRecord ev;
            ev.kind = EventKind::kAeHit;
            ev.hit = h;
            emit(ev, lane, h.arrival_frame);
          },
          [&](const AeLevel& l) {
            EventRecord ev;
            ev.kind = EventKind::kAeLevel;
            ev.ae_level = l;
            emit(ev, lane, l.end_frame);
          });
    }
  }
  return StageStatus::kOk;
}

void AeHitsStage::reset() noexcept {
  if (detector_) detector_->reset();
}

void AeHitsStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  if (ev.kind == EventKind::kAeHit) {
    const AeHitFeatures f = ae_hit_features(ev.hit, params_);
    body["amplitude_db"] = f.amplitude_db;
    body["threshold_db"] = f.threshold_db;
    body["rise_time_us"] = f.rise_time_s * 1e6;
    body["duration_us"] = f.duration_s * 1e6;
    body["counts"] = ev.hit.counts;
    body["counts_to_peak"] = ev.hit.counts_to_peak;
    body["energy_eu"] = f.energy_eu;
    body["signal_strength_pvs"] = f.signal_strength_pvs;
    body["rms_v"] = f.rms_v;
    body["truncated"] = ev.hit.truncated;
  } else if (ev.kind == EventKind::kAeLevel) {
    body["rms_v"] = ae_level_rms_v(ev.ae_level, params_);
    const double asl = ae_level_asl_db(ev.ae_level, params_);
    body["asl_db"] = std::isfinite(asl) ? nlohmann::json(asl) : nlohmann::json(nullptr);
    body["interval_s"] = double(ev.ae_level.samples) / params_.rate_hz;
  }
}

}  // namespace vigil
