// RT: process() and apply_update() on the pipeline thread; describe_event() on the output thread;
// the rest on the main thread.
#include "stages/moments_cuda_stage.hpp"

#include <type_traits>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>

#include "core/rt_log.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"
#include "stages/cuda_stage_events.hpp"

namespace vigil {

template <class Cpu>
MomentsCudaStage<Cpu>::MomentsCudaStage(typename Cpu::Settings settings, uint16_t index, CudaStageOptions options,
                                        WorkerPool* pool)
    : index_(index), options_(options), cpu_(std::move(settings), index, pool),
      twin_(std::is_same_v<Cpu, VibrationStage> ? "vibration" : "band_rms", index, options.fail_at_chunk) {}

template <class Cpu>
MomentsCudaStage<Cpu>::~MomentsCudaStage() {
  destroy_graphs();
}

template <class Cpu>
void MomentsCudaStage<Cpu>::destroy_graphs() noexcept {
  for (const RunGraph& g : graphs_) cudaGraphExecDestroy(g.exec);
  graphs_.clear();
  graphs_failed_ = false;
}

template <class Cpu>
StreamFormat MomentsCudaStage<Cpu>::prepare(const StreamFormat& in, uint32_t max_frames) {
  const StreamFormat out = cpu_.prepare(in, max_frames);  // validates the settings
  lanes_ = in.bands * in.channels;
  max_frames_ = max_frames;
  gpu_ = cpu_.sums_segments();
  twin_.start_on_cpu(!gpu_);
  if (!gpu_) return out;
  destroy_graphs();
  timing_ = false;
  staging_.prepare(lanes_, 0, max_frames_, options_.mapped);
  moments_ = cuda::PinnedBuffer(size_t(lanes_) * cuda::RunSplit::kMaxRuns * sizeof(Moments), true);
  starts_ = cuda::PinnedBuffer((cuda::RunSplit::kMaxRuns + 1) * sizeof(uint32_t), false);
  d_starts_ = cuda::DeviceBuffer(starts_.bytes());
  graphs_.reserve(kGraphs);
  // Warm-up (module loading) on a chunk of zeros; the twin's state is not touched.
  std::fill_n(staging_.host_in(), size_t(lanes_) * max_frames_, 0.0f);
  cuda::RunSplit split;
  split.runs = 1;
  split.start[1] = max_frames_;
  Block zeros{staging_.host_in(), max_frames_, max_frames_, in.channels, in.bands};
  VIGIL_CUDA_CHECK(run_gpu(zeros, split));
  timing_ = true;
  return out;
}

template <class Cpu>
cudaError_t MomentsCudaStage<Cpu>::launch_gpu(const Block& in, const cuda::RunSplit& split) noexcept {
  // The producer's output still on the device (a CUDA stage that ran there this chunk): read it
  // there. Else the host block, staged (or read in place when it is the bound staging).
  const float* device_in = twin_.producer() && in.stride == max_frames_ ? twin_.producer()->device_output() : nullptr;
  if (!device_in) staging_.stage(in.data, in.stride, in.frames);
  const bool from_bound = staging_.reads_bound(in.data);
  pending_runs_ = split.runs;
  pending_device_in_ = device_in != nullptr;
  // Read in place, so the graph copies nothing in whose size it would fix; not the warm-up's. The
  // cell's split is checked here (the by-value launch checks its own).
  const RunGraph* g = timing_ && (device_in || staging_.mapped()) && cuda::valid_split(split)
                          ? graph_for(device_in, from_bound, split.runs)
                          : nullptr;
  pending_graph_ = g != nullptr;
  if (g) {
    std::copy_n(split.start, split.runs + 1, starts_.host<uint32_t>());
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the cell's stores before the launch's
    return staging_.launch([&] { return cudaGraphLaunch(g->exec, staging_.stream()); }, timing_, true);
  }
  return staging_.launch(
      [&] {
        return staging_.enqueue(
            in.frames,
            [&](const float* d_in, float*, size_t stride) {
              return cuda::launch_lane_moments(d_in, stride, lanes_, split, moments_.device<Moments>(),
                                               staging_.stream());
            },
            from_bound, device_in);
      },
      timing_);
}

template <class Cpu>
cudaError_t MomentsCudaStage<Cpu>::run_gpu(const Block& in, const cuda::RunSplit& split) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(launch_gpu(in, split));
  return staging_.finish();
}

template <class Cpu>
const typename MomentsCudaStage<Cpu>::RunGraph* MomentsCudaStage<Cpu>::graph_for(const float* device_in, bool from_bound,
                                                                                uint32_t runs) noexcept {
  for (const RunGraph& g : graphs_)
    if (g.device_in == device_in && g.from_bound == from_bound && g.runs == runs) return &g;
  if (!options_.graphs || !options_.detector_graphs || graphs_failed_ || graphs_.size() == kGraphs) return nullptr;
  // Captured on the pipeline thread the first time a chunk is so read and cut: a few of them
  // early in a run (tens of microseconds each), then replays only.
  const cudaStream_t stream = staging_.stream();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) {
    e = staging_.record_captured_event(false);
    // The starts as the replay finds them in the page-locked cell (a copy node reads it then).
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(d_starts_.get(), starts_.host(), (runs + 1) * sizeof(uint32_t), cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess)
      e = staging_.enqueue(
          max_frames_,
          [&](const float* d_in, float*, size_t stride) {
            return cuda::launch_lane_moments_from_cell(d_in, stride, lanes_, runs, d_starts_.get<uint32_t>(),
                                                       moments_.device<Moments>(), stream);
          },
          from_bound, device_in);
    if (e == cudaSuccess) e = staging_.record_captured_event(true);
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    if (e == cudaSuccess) e = end;
  }
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGetLastError();  // not sticky: leave no error for the next call to find
    graphs_failed_ = true;  // launch by launch from here on
    return nullptr;
  }
  graphs_.push_back({device_in, from_bound, runs, exec});
  return &graphs_.back();
}

template <class Cpu>
StageStatus MomentsCudaStage<Cpu>::process(const Block& in, Block& out, const Exec& exec) noexcept {
  return finish_now(in, out, exec);
}

template <class Cpu>
bool MomentsCudaStage<Cpu>::begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept {
  out.frames = in.frames;
  if (twin_.on_cpu()) {
    done = cpu_.process(in, out, exec);
    return false;
  }
  twin_.count_chunk();
  cuda::RunSplit split;
  split.runs = cpu_.cut(in.frames, split.start, cuda::RunSplit::kMaxRuns);
  if (split.runs == 0) {  // more runs than the kernel takes (or an empty chunk): the twin sums it
    chunks_on_cpu_.fetch_add(1, std::memory_order_relaxed);
    done = twin_.input_on_host(in.frames) ? cpu_.process(in, out, exec) : StageStatus::kFailed;
    return false;
  }
  cudaError_t e = twin_.take_error(staging_.stream());
  if (e == cudaSuccess) e = launch_gpu(in, split);
  if (e == cudaSuccess) return true;
  done = fall_back(in, out, exec, e);
  return false;
}

template <class Cpu>
StageStatus MomentsCudaStage<Cpu>::finish(const Block& in, Block& out, const Exec& exec) noexcept {
  const cudaError_t e = staging_.finish();
  if (e != cudaSuccess) return fall_back(in, out, exec, e);
  if (pending_graph_) graph_chunks_.fetch_add(1, std::memory_order_relaxed);
  if (pending_device_in_ && timing_) device_input_chunks_.fetch_add(1, std::memory_order_relaxed);
  return cpu_.process_moments(in, moments_.host<Moments>(), pending_runs_, exec);
}

template <class Cpu>
StageStatus MomentsCudaStage<Cpu>::fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept {
  twin_.hand_over(exec, error);
  if (!twin_.input_on_host(in.frames)) return StageStatus::kFailed;
  return cpu_.process(in, out, exec);  // the windows' state is the twin's already
}

template <class Cpu>
void MomentsCudaStage<Cpu>::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  if (ev.kind == EventKind::kBackendFallback)
    describe_cuda_fallback(ev, body);
  else
    cpu_.describe_event(ev, body);
}

template <class Cpu>
bool MomentsCudaStage<Cpu>::write_event(const EventRecord& ev, EventText& text) const {
  if constexpr (std::is_base_of_v<EventTextWriter, Cpu>)
    return ev.kind != EventKind::kBackendFallback && cpu_.write_event(ev, text);
  else
    return false;  // the twin's events go through describe_event
}

template <class Cpu>
void MomentsCudaStage<Cpu>::add_status(nlohmann::json& status) const {
  if (gpu_) {
    staging_.add_status(status, on_cpu(), twin_.errors());
  } else {
    status["backend"] = "cpu";  // settings the twin cannot take as sums (a vibration window with no segment)
    status["cuda_errors"] = 0;
  }
  status["device_input_chunks"] = device_input_chunks();
  status["graph_chunks"] = graph_chunks();
  status["chunks_summed_on_cpu"] = chunks_on_cpu_.load(std::memory_order_relaxed);
}

template class MomentsCudaStage<VibrationStage>;
template class MomentsCudaStage<BandRmsStage>;

}  // namespace vigil
