// AeLocateStage: acoustic-emission source location (issue 52) from the hits of an ae_hits stage.
// Hits become events (dsp/ae_location: definition and lockout times, one hit per channel), each
// event is located (linear or planar, Geiger's method) and counted on the cluster grid, and goes
// out as an `ae_event` (docs/PROTOCOL.md).
//
// It does its work on the output thread, not the pipeline's: building events allocates and a
// planar location iterates from several starts, neither of which belongs on the real-time path,
// and the hits are there anyway (they arrive as the input stage's events). process() does
// nothing. The output thread hands it each hit of its input stage (take_hit) and, after each
// chunk, how far the stream has come (advance): hits are emitted when they end, lane by lane, so
// they are put back in arrival order over the input stage's longest hit plus its hit definition
// time before events are built from them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "config/settings.hpp"
#include "dsp/ae_cluster_alarm.hpp"
#include "dsp/ae_location.hpp"
#include "stages/event_record.hpp"
#include "stages/stage.hpp"

namespace vigil {

class AeLocateStage final : public Stage {
 public:
  explicit AeLocateStage(AeLocateSettings settings);
  // `in`: the ae_hits stage's output (events only: its input's rate and channels). Throws where
  // the geometry's sensors are not one per channel.
  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override {}
  // Pipeline thread: latched cluster alarms are released at the output thread's next advance.
  void acknowledge() noexcept override { ack_requests_.fetch_add(1, std::memory_order_relaxed); }
  void add_status(nlohmann::json& status) const override;

  // Output thread. One hit of the input stage (only band 0's: the lanes of its first band are
  // the sensors), with the fields its stage gave it (amplitude_db, energy_eu) and its time.
  void take_hit(const EventRecord& hit, const nlohmann::json& fields);
  // Output thread. The stream has been processed up to (not including) input frame `frame_end`
  // (UINT64_MAX: the end of the input): the events that closed, each an ae_event body (without
  // stage, frame and sample_time, which `first_hit` gives), onto `events`.
  // An ae_event, or (type "alarm") a cluster alarm's raise or clear.
  struct Located {
    nlohmann::json body;
    uint64_t frame = 0;     // the first hit's arrival (an alarm: the frame where its condition first held)
    int64_t t_utc_ns = 0;   // its time
    const char* type = "ae_event";
  };
  void advance(uint64_t frame_end, std::vector<Located>& events);

  const AeLocateSettings& settings() const noexcept { return settings_; }

 private:
  struct Pending {
    uint64_t frame = 0;
    AeArrival arrival;
  };
  Located describe(const AeEventHits& event);
  int64_t utc_ns_of(uint64_t frame) const;
  void judge_clusters(uint64_t frame, std::vector<Located>& events);

  AeLocateSettings settings_;
  AeGeometry geometry_;  // with the timing uncertainty in force
  double rate_hz_ = 0;
  uint64_t settle_frames_ = 0;
  std::unique_ptr<AeEventBuilder> builder_;
  AeClusterGrid grid_{1};
  std::unique_ptr<AeClusterAlarms> cluster_alarms_;  // with a cluster_alarm
  std::vector<AeClusterAlarms::Change> changes_;
  uint64_t acks_seen_ = 0;
  uint64_t last_event_frame_ = 0;
  std::vector<Pending> pending_;  // not yet settled, in arrival order
  uint64_t settled_to_ = 0;       // hits before this frame went to the builder
  // A hit's frame and UTC time: an event's time from its first hit's frame.
  uint64_t ref_frame_ = 0;
  int64_t ref_utc_ns_ = 0;
  std::vector<AeEventHits> closed_;
  std::atomic<uint64_t> hits_{0}, events_{0}, located_{0}, not_locatable_{0}, outside_{0}, lockout_hits_{0},
      repeated_channel_hits_{0}, late_hits_{0}, cluster_alarms_raised_{0}, cells_in_alarm_{0};
  std::atomic<uint64_t> ack_requests_{0};
};

}  // namespace vigil
