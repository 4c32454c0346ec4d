#include "pipeline/graph.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/clock.hpp"

#include "stages/channel_split_stage.hpp"
#include "stages/stage_factory.hpp"
#if VIGIL_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/gpu_keep_warm.hpp"
#else
namespace vigil::cuda {
class GpuKeepWarm {};  // never made without CUDA; defined so that the graph's pointer to one can be destroyed
}  // namespace vigil::cuda
#endif

namespace vigil {

Graph::Graph(const std::vector<StageSettings>& stages, GraphBackend backend)
    : gpu_resident_(backend.cuda && backend.gpu_resident), mapped_(backend.mapped), cpu_threads_(backend.cpu_threads),
      busy_poll_(backend.busy_poll), keep_gpu_warm_(backend.keep_gpu_warm) {
  StageBackend made{backend.cuda, backend.gpu_resident, backend.mapped, backend.fail_at_chunk,
                    backend.graphs, backend.detector_graphs, nullptr, backend.devices};
  // The worker pool, when some stage will split its lanes over it on the CPU.
  for (const StageSettings& s : stages)
    if (stage_splits_lanes_on_cpu(s, made) && backend.cpu_threads > 1 && !pool_)
      pool_ = std::make_unique<WorkerPool>(backend.cpu_threads, backend.busy_poll, "vigil-work");
  made.pool = pool_.get();
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSettings& s = stages[i];
    Node n;
    n.name = s.name;
    n.input = s.input;
    n.optional = s.optional;
    n.on_gpu = stage_runs_on_gpu(s, made);
    if (stage_chooses_backend_at_prepare(s, made))
      n.remake = [s, index = uint16_t(i), made](bool on_gpu) { return make_stage(s, index, on_gpu, made); };
    if (const size_t parts = stage_parts_over_devices(s, made)) {
      // Its parts are CUDA stages, each with its own staging; to the graph a two-phase stage whose
      // blocks are on the host, residency only between its parts and a chained split's
      // (ChannelSplitStage::chain_after).
      auto split = make_split_stage(s, uint16_t(i), parts, made);
      n.split = static_cast<ChannelSplitStage*>(split.get());
      n.stage = std::move(split);
      n.on_gpu = false;
    } else {
      n.stage = make_stage(s, uint16_t(i), n.on_gpu, made);  // band_rms: the CPU stage until prepare() chooses
    }
    n.gpu = gpu_part(*n.stage);
    n.two_phase = n.gpu && n.gpu->two_phase();
    nodes_.push_back(std::move(n));
  }
}

Graph::Graph(std::vector<Made> stages, GraphBackend backend)
    : gpu_resident_(backend.cuda && backend.gpu_resident), mapped_(backend.mapped) {
  for (Made& m : stages) {
    Node n;
    n.name = m.name;
    n.input = m.input;
    n.stage = std::move(m.stage);
    n.gpu = gpu_part(*n.stage);
    n.two_phase = n.gpu && n.gpu->two_phase();
    nodes_.push_back(std::move(n));
  }
}

Graph::~Graph() = default;

void Graph::keep_gpu_warm() noexcept {
#if VIGIL_HAVE_CUDA
  if (keep_warm_.empty()) return;
  const int64_t now = mono_now_ns();
  for (WarmDevice& w : keep_warm_) {
    const DeviceScope scope(w.scope_device);
    w.warm->ping(now);
  }
#endif
}

Graph::KeepWarmCounts Graph::keep_warm_counts() const noexcept {
  KeepWarmCounts c;
#if VIGIL_HAVE_CUDA
  for (const WarmDevice& w : keep_warm_) {
    c.on = true;
    c.interval_ns = w.warm->interval_ns();
    ++c.devices;
    c.rounds += w.warm->rounds();
    c.errors += w.warm->errors();
  }
#endif
  return c;
}

int Graph::find_stream(const std::string& name) const noexcept {
  for (size_t i = 0; i < streams_.size(); ++i)
    if (streams_[i].name == name) return int(i);
  return -1;
}

int Graph::find_stage(const std::string& name) const noexcept {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].name == name) return int(i);
  return -1;
}

void Graph::prepare(const StreamFormat& input, uint32_t max_frames, const std::vector<std::string>* host_streams) {
  input_on_host_ = !host_streams;
  if (host_streams)
    for (const std::string& name : *host_streams) input_on_host_ = input_on_host_ || name == "input";
  raw_input_ = false;
  // Every stage on the GPU: a pool for the pipeline thread's own work (the conversion above all),
  // when chunks are large enough to split.
  if (!pool_ && cpu_threads_ > 1 && uint64_t(input.channels) * max_frames >= kSplitSamples)
    pool_ = std::make_unique<WorkerPool>(cpu_threads_, busy_poll_, "vigil-work");
  streams_.clear();
  buffers_.clear();
  // A stream's buffer: the stage's own output buffer where it offers one, else allocated here.
  auto add_stream = [&](const std::string& name, const StreamFormat& f, float* owned) {
    const size_t lanes = size_t(f.bands) * f.channels;
    buffers_.emplace_back(owned ? 0 : lanes * max_frames, 0.0f);
    float* data = owned ? owned : buffers_.back().data();
    streams_.push_back(Stream{name, f, Block{data, max_frames, 0, f.channels, f.bands}, owned != nullptr});
    return int(streams_.size() - 1);
  };
  // Reserve so Block pointers into buffers_ and streams_ stay valid.
  buffers_.reserve(nodes_.size() + 1);
  streams_.reserve(nodes_.size() + 1);
  StreamFormat in = input;
  in.bands = 1;
  in.band_names = {""};
  add_stream("input", in, nullptr);
  // A band_rms stage runs on the GPU only where its input stays there (the bands of a CUDA stage
  // that nothing reads on the host): then only its sums cross to the host. Where its input comes
  // back to the host anyway, one pass of squares on the CPU costs less than a round trip to the
  // GPU per chunk (on the GPU with the bands sent, vigild fell behind at 512-frame chunks at 10x
  // real time with other processes sharing the GPU).
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (!n.remake) continue;
    const int p = find_stage(n.input);  // an earlier stage's stream (else the loop below throws)
    const bool gpu = p >= 0 && size_t(p) < i && nodes_[size_t(p)].on_gpu &&
                     output_stays_on_device(size_t(p), host_streams, true);
    if (gpu != n.on_gpu) {
      n.stage = n.remake(gpu);
      n.gpu = gpu_part(*n.stage);
      n.two_phase = n.gpu && n.gpu->two_phase();
      n.on_gpu = gpu;
    }
  }
  // A split reading another split's output over the same devices: part by part (chain_after).
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (const int p = find_stage(nodes_[i].input); nodes_[i].split && p >= 0 && size_t(p) < i && nodes_[size_t(p)].split)
      nodes_[i].split->chain_after(*nodes_[size_t(p)].split);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    n.input_stream = find_stream(n.input);
    if (const int p = find_stage(n.input); n.input_stream < 0 && p >= 0 && size_t(p) < i &&
                                           nodes_[size_t(p)].output_stream < 0) {
      // A reader of an earlier stage's events (ae_locate of an ae_hits stage's hits): it works on
      // the output thread from those events, and is not run on the pipeline's.
      n.events_only_input = true;
      n.events_format = n.stage->prepare(nodes_[size_t(p)].events_format, max_frames);
      continue;
    }
    if (n.input_stream < 0)
      throw std::invalid_argument("stage '" + n.name + "': input '" + n.input + "' is not an earlier sample stream");
    const Stream& input_stream = streams_[size_t(n.input_stream)];
    n.producer = input_stream.producer;
    const bool keep = output_stays_on_device(i, host_streams, false);
    if (n.gpu) {
      if (input_stream.stage_owned) n.gpu->bind_input(input_stream.block.data);
      if (n.producer >= 0 && gpu_resident_) n.gpu->bind_producer(nodes_[size_t(n.producer)].gpu);
      n.gpu->keep_output_on_device(keep);
    }
    const StreamFormat out = n.stage->prepare(input_stream.format, max_frames);
    n.output_stream = out.bands > 0 ? add_stream(n.name, out, n.gpu ? n.gpu->output_buffer() : nullptr) : -1;
    if (out.bands == 0) n.events_format = out;
    if (n.output_stream >= 0) {
      streams_[size_t(n.output_stream)].producer = int(i);
      streams_[size_t(n.output_stream)].on_device_only = keep;
    }
  }
  // The chunk is converted straight into the staged input of the first stage that reads it and
  // offers one (a CUDA stage); the others read it there. Where that stage has a second one, the
  // next chunk may be converted there while this one runs (the look-ahead).
  look_ahead_stage_ = -1;
  input_slot_ = 0;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].input_stream == 0)
      if (float* staged = nodes_[i].gpu ? nodes_[i].gpu->input_buffer() : nullptr) {
        streams_[0].block.data = staged;
        if (float* second = nodes_[i].gpu->input_slot(1)) {
          look_ahead_stage_ = int(i);
          next_input_ = streams_[0].block;
          next_input_.data = second;
        }
        break;
      }
#if VIGIL_HAVE_CUDA
  if (keep_gpu_warm_ && keep_warm_.empty()) {
    // Every device a stage runs on: a split's parts on devices of their own were left cold before
    // (2026-12-06: a split node is no CUDA stage to the graph).
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) (void)cudaGetLastError();
    std::vector<int> devices;
    const auto add = [&](int d) {
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    };
    for (const Node& n : nodes_) {
      if (n.on_gpu) add(current);
      if (n.split)
        for (int d : n.split->gpu_devices()) add(d);
    }
    for (int d : devices) {
      const int scope_device = d == current ? -1 : d;
      const DeviceScope scope(scope_device);
      keep_warm_.push_back({scope_device, std::make_unique<cuda::GpuKeepWarm>()});
    }
  }
#else
  (void)keep_gpu_warm_;  // no GPU to keep warm
#endif
}

bool Graph::output_stays_on_device(size_t i, const std::vector<std::string>* host_streams,
                                   bool choosing) const noexcept {
  if (!host_streams || !gpu_resident_ || mapped_) return false;  // mapped: the kernels write the host anyway
  for (const std::string& name : *host_streams)
    if (name == nodes_[i].name) return false;
  for (size_t j = i + 1; j < nodes_.size(); ++j) {
    if (nodes_[j].input != nodes_[i].name) continue;
    if (!(choosing && nodes_[j].remake) && needs_host_input(nodes_[j])) return false;
    // A split's output stays on its parts' devices only for splits that read it part by part.
    if (nodes_[i].split && !(nodes_[j].split && nodes_[j].split->chained())) return false;
  }
  return true;
}

bool Graph::upload_next_input(const void* raw, uint32_t frames_up) noexcept {
  if (look_ahead_stage_ < 0) return false;
  return nodes_[size_t(look_ahead_stage_)].gpu->upload_input(input_slot_ ^ 1u, next_input_.frames, raw, frames_up);
}

bool Graph::upload_next_input_part(const void* raw, uint32_t first, uint32_t frames) noexcept {
  if (look_ahead_stage_ < 0 || !raw_input_) return false;
  return nodes_[size_t(look_ahead_stage_)].gpu->upload_input_part(input_slot_ ^ 1u, raw, first, frames);
}

bool Graph::take_raw_input(SampleFormat format, float scale) {
  if (look_ahead_stage_ < 0 || input_on_host_ || mapped_) return false;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].input_stream == 0 && int(i) != look_ahead_stage_) return false;  // another reads it on the host
  raw_input_ = nodes_[size_t(look_ahead_stage_)].gpu->accept_raw_input(format, scale);
  return raw_input_;
}

void Graph::input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept {
  clipped = non_finite = 0;
  if (raw_input_) nodes_[size_t(look_ahead_stage_)].gpu->input_counts(clipped, non_finite);
}

void Graph::advance_input() noexcept {
  if (look_ahead_stage_ < 0) return;
  std::swap(streams_[0].block, next_input_);
  input_slot_ ^= 1u;
}

Graph::Step Graph::start(const Exec& exec) noexcept {
  run_frames_ = streams_[0].block.frames;
  result_ = StageStatus::kOk;
  slowest_ = {};
  next_node_ = 0;
  run_t_ = mono_now_ns();
  return advance(exec);
}

Graph::Step Graph::advance(const Exec& exec) noexcept {
  for (; next_node_ < nodes_.size(); ++next_node_) {
    Node& n = nodes_[next_node_];
    if ((n.optional && shed_) || n.events_only_input) continue;
    if (n.optional && test_optional_cost_ns_ > 0) sleep_until_mono_ns(mono_now_ns() + test_optional_cost_ns_);
    const Block& in = input_of(n);
    Block& out = output_of(n);
    out.frames = run_frames_;
    // A reader on the host of a stream kept on the device (a CUDA stage now on its CPU twin):
    // the copy back first. Failing that, the chunk is lost to this stage: a failure.
    bool ok = true;
    if (n.producer >= 0 && needs_host_input(n) && nodes_[size_t(n.producer)].gpu)
      ok = nodes_[size_t(n.producer)].gpu->make_output_host_valid(run_frames_);
    StageStatus done = StageStatus::kFailed;
    if (ok && n.two_phase) {
      if (n.gpu->begin(in, out, exec, done)) return Step::kGpuBusy;  // resume() finishes it
    } else if (ok) {
      done = n.stage->process(in, out, exec);
    }
    if (done != StageStatus::kOk) result_ = StageStatus::kFailed;
    timed(next_node_);
  }
  return Step::kDone;
}

Graph::Step Graph::resume(const Exec& exec) noexcept {
  Node& n = nodes_[next_node_];
  if (n.gpu->finish(input_of(n), output_of(n), exec) != StageStatus::kOk) result_ = StageStatus::kFailed;
  timed(next_node_++);
  return advance(exec);
}

bool Graph::gpu_busy() noexcept { return next_node_ < nodes_.size() && nodes_[next_node_].gpu->busy(); }

void Graph::timed(size_t node) noexcept {
  const int64_t t1 = mono_now_ns();
  nodes_[node].time->record_ns(t1 - run_t_);
  if (t1 - run_t_ > slowest_.ns) slowest_ = {int(node), t1 - run_t_};
  run_t_ = t1;
}

std::unique_ptr<Graph::Update> Graph::plan_update(const std::vector<StageSettings>& current,
                                                  const std::vector<StageSettings>& next, std::string& why) const {
  if (current.size() != next.size() || current.size() != nodes_.size()) {
    why = "the number of stages changed";
    return nullptr;
  }
  auto update = std::make_unique<Update>();
  for (size_t i = 0; i < next.size(); ++i) {
    const StageSettings &a = current[i], &b = next[i];
    if (a.name != b.name || a.kind != b.kind || a.input != b.input) {
      why = "stage " + std::to_string(i) + " ('" + a.name + "') changed its name, kind or input";
      return nullptr;
    }
    if (a == b) {
      update->stages.emplace_back();
      continue;
    }
    StageUpdatePlan plan = nodes_[i].stage->plan_update(b);
    if (plan.structural) {
      why = "stage '" + a.name + "': " + plan.why;
      return nullptr;
    }
    update->stages.push_back(std::move(plan.update));
  }
  return update;
}

int Graph::apply_update(Update& update) noexcept {
  int failed = -1;
  for (size_t i = 0; i < nodes_.size() && i < update.stages.size(); ++i)
    if (update.stages[i] && !nodes_[i].stage->apply_update(*update.stages[i]) && failed < 0) failed = int(i);
  return failed;
}

void Graph::set_shed(bool shed) noexcept {
  if (shed_ && !shed)
    for (Node& n : nodes_)
      if (n.optional) n.stage->reset();
  shed_ = shed;
}

std::vector<std::string> Graph::optional_stages() const {
  std::vector<std::string> names;
  for (const Node& n : nodes_)
    if (n.optional) names.push_back(n.name);
  return names;
}

void Graph::acknowledge() noexcept {
  for (Node& n : nodes_) n.stage->acknowledge();
}

void Graph::reset() noexcept {
  for (Node& n : nodes_) n.stage->reset();
}

const std::string& Graph::stage_input_band_name(size_t i, size_t band) const noexcept {
  static const std::string kNone;
  const Node& n = nodes_[i];
  if (n.input_stream < 0) return kNone;
  const auto& names = streams_[size_t(n.input_stream)].format.band_names;
  return band < names.size() ? names[band] : kNone;
}

}  // namespace vigil
