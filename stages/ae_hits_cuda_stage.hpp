// AeHitsCudaStage: the ae_hits stage on the CUDA backend (without transient capture, which stays
// with the CPU stage: Graph picks this one only where fits()). cuda/AeHitDetectorCuda runs every
// lane's hit state machine on the GPU; only the hits, the level intervals and the lanes' state
// come back (page-locked: the kernel writes the few hits there, the state is copied once per
// chunk), and they go out as the CPU stage's events, in the CPU stage's order. The input is read
// on the device where the CUDA stage before it left it there (a denoiser or a FIR bank: no copy
// back and forth, and that stage skips its copy back when nothing else reads it on the host:
// Stage::bind_producer), else through page-locked staging like the other CUDA stages.
//
// The CPU twin is the CPU stage itself (pipeline/ae_hits_stage): it describes the events and plans
// reloads. On a CUDA error (counted, one `backend` event, state fallback) it takes over from the
// state the GPU left after the last good chunk, with the failing chunk's input brought to the host,
// so that chunk and every later one give the events the CPU would have given: no chunk lost.
// Only built with CUDA (VIGIL_HAVE_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "cuda/ae_hit_detector_cuda.hpp"
#include "stages/ae_hits_stage.hpp"
#include "stages/cuda_staging.hpp"
#include "stages/cuda_twin.hpp"
#include "stages/fir_bank_cuda_stage.hpp"  // CudaStageOptions
#include "core/latency_histogram.hpp"
#include "stages/stage.hpp"

namespace vigil {

class AeHitsCudaStage final : public Stage, public EventTextWriter, public GpuStage {
 public:
  // Whether these settings can run on the GPU: no transient capture.
  static bool fits(const AeHitSettings& s) noexcept { return !(s.waveform_s > 0); }
  // Hits (and, separately, level intervals) one chunk may report; more are counted as dropped events.
  static constexpr uint32_t kCapacity = 65536;

  AeHitsCudaStage(AeHitSettings settings, uint16_t index, CudaStageOptions options);
  ~AeHitsCudaStage() override;

  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  bool write_event(const EventRecord& ev, EventText& text) const override;
  void add_status(nlohmann::json& status) const override;
  // The staged input, for the graph to spare host copies; the producer's device output (Stage).
  void bind_input(const float* page_locked) noexcept override { staging_.bind_input(page_locked); }
  float* input_buffer() const noexcept override { return staging_.host_in(); }
  void bind_producer(GpuStage* producer) noexcept override { twin_.bind_producer(producer); }
  bool needs_host_input() const noexcept override { return on_cpu(); }
  // Two-phase work (GpuStage): begin() queues the detector, finish() emits the hits.
  bool two_phase() const noexcept override { return true; }
  bool begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept override;
  bool busy() noexcept override { return staging_.busy(); }
  StageStatus finish(const Block& in, Block& out, const Exec& exec) noexcept override;

  bool on_cpu() const noexcept { return twin_.on_cpu(); }
  // Chunks whose input was read where the stage before left it on the device.
  uint64_t device_input_chunks() const noexcept { return device_input_chunks_.load(std::memory_order_relaxed); }

 private:
  // The chunk's detector work, queued (launch_gpu) or queued and waited for (run_gpu: the warm-up).
  cudaError_t launch_gpu(const Block& in, uint64_t first_frame) noexcept;
  cudaError_t run_gpu(const Block& in, uint64_t first_frame) noexcept;
  void emit_results(const Exec& exec) noexcept;
  // After a CUDA error: the chunk on the CPU twin, from where the GPU left every lane.
  StageStatus fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept;
  bool pending_device_in_ = false;  // the queued chunk reads the producer's device output

  AeHitSettings settings_;
  uint16_t index_;
  CudaStageOptions options_;
  AeHitsStage cpu_;  // the twin: describes events, plans reloads, runs after a CUDA error
  uint32_t lanes_ = 0, max_frames_ = 0;
  CudaStaging staging_;  // before the detector: its stream outlives it
  std::unique_ptr<cuda::AeHitDetectorCuda> gpu_;
  std::vector<AeChannelState> last_state_;  // every lane after the last good chunk
  uint64_t dropped_seen_ = 0;
  CudaTwin twin_;  // the fault injection, deferred errors, producer and hand-over
  std::atomic<uint64_t> device_input_chunks_{0};
  bool timing_ = false;  // not during the warm-up
  LatencyHistogram emit_time_;  // the host's part after the GPU: ordering the hits, queueing the events
};

}  // namespace vigil
