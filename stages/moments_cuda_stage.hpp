// MomentsCudaStage<Cpu>: a detector stage on the CUDA backend whose windows are built from sums
// (the detector reductions of issue 8): VibrationCudaStage (RMS, peak, peak-to-peak, crest factor
// and kurtosis from segment moments) and BandRmsCudaStage (windowed RMS; the graph picks it only
// where its input stays on the device: Graph::prepare). The GPU reduces each
// lane's chunk to the moments of the runs the CPU stage cuts it into (Cpu::cut: at segment or
// window ends; cuda/lane_moments), and only those few numbers per lane cross to the host, where
// the CPU stage itself (Cpu::process_moments) merges them into windows, analyses them and raises
// the same events. The input is read on the device where the CUDA stage before it left it there
// (a FIR bank's bands: Stage::bind_producer), else through page-locked staging.
//
// The CPU twin is the CPU stage: its window and alarm state lives on the host either way, so on a
// CUDA error (counted, one `backend` event, state fallback) it sums that chunk and every later one
// itself, with the failing chunk brought to the host: no chunk lost. A chunk cut into more runs
// than the kernel takes is summed by the twin too; settings the twin cannot take as sums
// (Cpu::sums_segments false: a vibration window and hop with no common segment) run on it from
// the start (`backend` `cpu` in the status). Only built with CUDA (VIGIL_HAVE_CUDA).
//
// A chunk read where it lies (the producer's device output, or mapped staging) is replayed as a
// CUDA graph (CudaStageOptions::graphs and detector_graphs, the latter off by default until
// measured): the kernel and the graph's own GPU-time events in one launch, the run starts read
// from a mapped cell written before each replay; two CUDA calls a chunk instead of four. One graph per number of runs and input (a chunk is cut into one or two
// counts of runs, mostly), captured the first time each is met, up to kGraphs.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "cuda/lane_moments.cuh"
#include "cuda/pinned_buffer.hpp"
#include "stages/cuda_staging.hpp"
#include "stages/cuda_twin.hpp"
#include "stages/fir_bank_cuda_stage.hpp"  // CudaStageOptions
#include "stages/band_rms_stage.hpp"
#include "stages/stage.hpp"
#include "stages/vibration_stage.hpp"

namespace vigil {

template <class Cpu>
class MomentsCudaStage final : public Stage, public EventTextWriter, public GpuStage {
 public:
  // Whether these settings can sum on the GPU (Cpu::gpu_fits).
  static bool fits(const typename Cpu::Settings& s) noexcept { return Cpu::gpu_fits(s); }
  // pool: the twin's, for the lanes it sums itself (null: the pipeline thread alone).
  MomentsCudaStage(typename Cpu::Settings settings, uint16_t index, CudaStageOptions options, WorkerPool* pool = nullptr);
  ~MomentsCudaStage() override;

  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override { cpu_.reset(); }
  void acknowledge() noexcept override { cpu_.acknowledge(); }
  StageUpdatePlan plan_update(const StageSettings& next) const override { return cpu_.plan_update(next); }
  bool apply_update(StageUpdate& update) noexcept override { return cpu_.apply_update(update); }
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  // The twin's events as text; a fallback event goes through describe_event.
  bool write_event(const EventRecord& ev, EventText& text) const override;
  void add_status(nlohmann::json& status) const override;
  // The staged input, for the graph to spare host copies; the producer's device output (Stage).
  void bind_input(const float* page_locked) noexcept override { staging_.bind_input(page_locked); }
  float* input_buffer() const noexcept override { return gpu_ ? staging_.host_in() : nullptr; }
  void bind_producer(GpuStage* producer) noexcept override { twin_.bind_producer(producer); }
  bool needs_host_input() const noexcept override { return on_cpu(); }
  // Two-phase work (GpuStage): begin() queues the sums, finish() hands them to the twin.
  bool two_phase() const noexcept override { return true; }
  bool begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept override;
  bool busy() noexcept override { return staging_.busy(); }
  StageStatus finish(const Block& in, Block& out, const Exec& exec) noexcept override;

  // Whether the CPU twin sums the chunks (settings it cannot take as sums, or after a CUDA error).
  bool on_cpu() const noexcept { return twin_.on_cpu(); }
  // Chunks whose input was read where the stage before left it on the device.
  uint64_t device_input_chunks() const noexcept { return device_input_chunks_.load(std::memory_order_relaxed); }
  // Chunks summed by a graph's replay.
  uint64_t graph_chunks() const noexcept { return graph_chunks_.load(std::memory_order_relaxed); }

 private:
  // A captured chunk: the kernel over `runs` runs of the input at device_in (or the staged or
  // bound input, from_bound, in mapped mode), its starts copied from starts_ to d_starts_.
  struct RunGraph {
    const float* device_in;
    bool from_bound;
    uint32_t runs;
    cudaGraphExec_t exec;
  };
  static constexpr size_t kGraphs = 8;

  // The chunk's sums over split's runs: queued (launch_gpu), or queued and waited for (run_gpu:
  // the warm-up).
  cudaError_t launch_gpu(const Block& in, const cuda::RunSplit& split) noexcept;
  cudaError_t run_gpu(const Block& in, const cuda::RunSplit& split) noexcept;
  // After a CUDA error: the chunk on the CPU twin (the windows' state is the twin's already).
  StageStatus fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept;
  // The graph for a chunk so read and cut, captured now if it is new; null where none can be.
  const RunGraph* graph_for(const float* device_in, bool from_bound, uint32_t runs) noexcept;
  void destroy_graphs() noexcept;

  uint16_t index_;
  CudaStageOptions options_;
  Cpu cpu_;  // the twin: windows, analyses, alarms and events; sums after a CUDA error
  uint32_t lanes_ = 0, max_frames_ = 0;
  bool gpu_ = false;       // the GPU sums this stage's chunks (sums_segments)
  CudaStaging staging_;
  cuda::PinnedBuffer moments_;  // lanes x RunSplit::kMaxRuns Moments, mapped: the kernel writes them
  std::vector<RunGraph> graphs_;  // reserved for kGraphs: pointers to them stay valid
  bool graphs_failed_ = false;    // a capture failed (a driver or build that cannot): no more tries
  cuda::PinnedBuffer starts_;     // the replayed chunk's RunSplit::start: each graph copies it ...
  cuda::DeviceBuffer d_starts_;   // ... here first, where its kernel reads it
  CudaTwin twin_;  // the fault injection, producer and hand-over
  std::atomic<uint64_t> device_input_chunks_{0}, chunks_on_cpu_{0}, graph_chunks_{0};
  bool timing_ = false;  // not during the warm-up
  // The queued chunk (launch_gpu): its runs, whether a graph sums it, whether it reads the device.
  uint32_t pending_runs_ = 0;
  bool pending_graph_ = false, pending_device_in_ = false;
};

using VibrationCudaStage = MomentsCudaStage<VibrationStage>;
using BandRmsCudaStage = MomentsCudaStage<BandRmsStage>;
extern template class MomentsCudaStage<VibrationStage>;
extern template class MomentsCudaStage<BandRmsStage>;

}  // namespace vigil
