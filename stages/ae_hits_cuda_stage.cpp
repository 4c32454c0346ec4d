// RT: process() and apply_update() on the pipeline thread; describe_event() on the output thread;
// the rest on the main thread.
#include "stages/ae_hits_cuda_stage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "core/clock.hpp"
#include "core/rt_log.hpp"
#include "config/settings.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"
#include "stages/cuda_stage_events.hpp"
#include "stages/event_record.hpp"

namespace vigil {

AeHitsCudaStage::AeHitsCudaStage(AeHitSettings settings, uint16_t index, CudaStageOptions options)
    : settings_(settings), index_(index), options_(options), cpu_(settings, index),
      twin_("ae_hits", index, options.fail_at_chunk) {}

AeHitsCudaStage::~AeHitsCudaStage() = default;  // the detector goes before the staging's stream

StreamFormat AeHitsCudaStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  const StreamFormat out = cpu_.prepare(in, max_frames);  // validates the settings
  lanes_ = in.bands * in.channels;
  max_frames_ = max_frames;
  staging_.prepare(lanes_, 0, max_frames_, options_.mapped);
  gpu_ = std::make_unique<cuda::AeHitDetectorCuda>(cpu_.detector_params(), lanes_, kCapacity, false, true, max_frames_);
  last_state_.assign(gpu_->state(), gpu_->state() + lanes_);
  // Warm-up (module loading) on a chunk of zeros, then a clean state.
  std::fill_n(staging_.host_in(), size_t(lanes_) * max_frames_, 0.0f);
  Block zeros{staging_.host_in(), max_frames_, max_frames_, in.channels, in.bands};
  VIGIL_CUDA_CHECK(run_gpu(zeros, 0));
  gpu_->reset();
  timing_ = true;
  return out;
}

cudaError_t AeHitsCudaStage::launch_gpu(const Block& in, uint64_t first_frame) noexcept {
  // The producer's output still on the device (a CUDA stage that ran there this chunk): read it
  // there. Else the host block, staged (or read in place when it is the bound staging).
  const float* device_in = twin_.producer() && in.stride == max_frames_ ? twin_.producer()->device_output() : nullptr;
  if (!device_in) staging_.stage(in.data, in.stride, in.frames);
  const bool from_bound = staging_.reads_bound(in.data);
  pending_device_in_ = device_in != nullptr;
  return staging_.launch(
      [&] {
        return staging_.enqueue(
            in.frames,
            [&](const float* d_in, float*, size_t stride) {
              return gpu_->enqueue(d_in, stride, in.frames, first_frame, staging_.stream());
            },
            from_bound, device_in);
      },
      timing_);
}

cudaError_t AeHitsCudaStage::run_gpu(const Block& in, uint64_t first_frame) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(launch_gpu(in, first_frame));
  return staging_.finish();
}

void AeHitsCudaStage::emit_results(const Exec& exec) noexcept {
  cuda::AeHitDetectorCuda::Results r = gpu_->results();
  // The CPU stage's order: lane by lane, and in a lane as the detector raised them. A hit is
  // raised at the sample that ends it (HDT after its last crossing, or the maximum duration
  // after its arrival), before that sample's level interval closes.
  const AeSampleParams& p = cpu_.detector_params();
  auto raised = [&](const AeHit& h) { return h.truncated ? h.arrival_frame + p.max_duration : h.end_frame + p.hdt + 1; };
  std::sort(r.hits, r.hits + r.hits_n, [&](const AeHit& a, const AeHit& b) {
    return a.channel != b.channel ? a.channel < b.channel : raised(a) < raised(b);
  });
  std::sort(r.levels, r.levels + r.levels_n, [](const AeLevel& a, const AeLevel& b) {
    return a.channel != b.channel ? a.channel < b.channel : a.end_frame < b.end_frame;
  });
  uint32_t i = 0, j = 0;
  while (i < r.hits_n || j < r.levels_n) {
    const bool hit = j == r.levels_n || (i < r.hits_n && (r.hits[i].channel != r.levels[j].channel
                                                              ? r.hits[i].channel < r.levels[j].channel
                                                              : raised(r.hits[i]) <= r.levels[j].end_frame));
    EventRecord ev;
    if (hit) {
      const AeHit& h = r.hits[i++];
      ev.kind = EventKind::kAeHit;
      ev.hit = h;
      cpu_.fill_event(ev, h.channel, h.arrival_frame, exec);
    } else {
      const AeLevel& l = r.levels[j++];
      ev.kind = EventKind::kAeLevel;
      ev.ae_level = l;
      cpu_.fill_event(ev, l.channel, l.end_frame, exec);
    }
    emit_event(exec, ev);
  }
  if (const uint64_t d = gpu_->dropped(); d != dropped_seen_) {  // beyond the capacity: dropped events
    if (exec.events_dropped) exec.events_dropped->fetch_add(d - dropped_seen_, std::memory_order_relaxed);
    dropped_seen_ = d;
  }
}

StageStatus AeHitsCudaStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  return finish_now(in, out, exec);
}

bool AeHitsCudaStage::begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept {
  out.frames = in.frames;
  if (twin_.on_cpu()) {
    done = cpu_.process(in, out, exec);
    return false;
  }
  return twin_.queue(
      staging_.stream(), [&] { return launch_gpu(in, exec.chunk.first_frame); },
      [&](cudaError_t e) { return fall_back(in, out, exec, e); }, done);
}

StageStatus AeHitsCudaStage::finish(const Block& in, Block& out, const Exec& exec) noexcept {
  const cudaError_t e = staging_.finish();
  if (e != cudaSuccess) return fall_back(in, out, exec, e);
  if (pending_device_in_ && timing_) device_input_chunks_.fetch_add(1, std::memory_order_relaxed);
  const int64_t t_emit = mono_now_ns();
  emit_results(exec);
  emit_time_.record_ns(mono_now_ns() - t_emit);
  std::copy(gpu_->state(), gpu_->state() + lanes_, last_state_.begin());
  return StageStatus::kOk;
}

StageStatus AeHitsCudaStage::fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept {
  twin_.hand_over(exec, error);
  if (!twin_.input_on_host(in.frames)) return StageStatus::kFailed;
  cpu_.continue_from(last_state_.data());  // every lane where the GPU left it after the last good chunk
  return cpu_.process(in, out, exec);
}

void AeHitsCudaStage::reset() noexcept {
  cpu_.reset();
  if (gpu_ && !twin_.on_cpu()) {
    // A failed reset: the next process() moves to the CPU twin (reset too).
    twin_.defer(cuda::error_of([&] { gpu_->reset(); }));
    std::copy(gpu_->state(), gpu_->state() + lanes_, last_state_.begin());
  }
}

StageUpdatePlan AeHitsCudaStage::plan_update(const StageSettings& next) const { return cpu_.plan_update(next); }

bool AeHitsCudaStage::apply_update(StageUpdate& update) noexcept {
  if (!cpu_.apply_update(update)) return false;  // the twin takes the new thresholds and times
  if (twin_.on_cpu()) return true;
  // The lanes' thresholds follow the new ones (AeHitDetector::set_params' rule) on the GPU and in
  // the state a fallback would continue from.
  const AeSampleParams& p = cpu_.detector_params();
  for (AeChannelState& s : last_state_) s.threshold = p.floating_window ? std::max(s.threshold, p.threshold) : p.threshold;
  // Failed: the next process() moves to the CPU twin, which has them.
  twin_.defer(cuda::error_of([&] { gpu_->set_params(p); }));
  return true;
}

void AeHitsCudaStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  if (ev.kind == EventKind::kBackendFallback)
    describe_cuda_fallback(ev, body);
  else
    cpu_.describe_event(ev, body);
}

bool AeHitsCudaStage::write_event(const EventRecord& ev, EventText& text) const {
  return ev.kind != EventKind::kBackendFallback && cpu_.write_event(ev, text);
}

void AeHitsCudaStage::add_status(nlohmann::json& status) const {
  staging_.add_status(status, on_cpu(), twin_.errors());
  status["device_input_chunks"] = device_input_chunks();
  status["emit_us"] = {{"p50", emit_time_.quantile_us(0.5)}, {"p99", emit_time_.quantile_us(0.99)},
                       {"max", emit_time_.max_us()}};
}

}  // namespace vigil
