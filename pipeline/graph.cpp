#include "pipeline/graph.hpp"

#include <stdexcept>
#include <utility>

#include "acquisition/clock.hpp"

#include "pipeline/ae_hits_stage.hpp"
#include "pipeline/band_rms_stage.hpp"
#include "pipeline/denoise_stage.hpp"
#include "pipeline/fir_bank_stage.hpp"
#if VIGIL_HAVE_CUDA
#include "pipeline/ae_hits_cuda_stage.hpp"
#include "pipeline/denoise_cuda_stage.hpp"
#include "pipeline/fir_bank_cuda_stage.hpp"
#include "pipeline/moments_cuda_stage.hpp"
#include "cuda/gpu_keep_warm.hpp"
#else
namespace vigil::cuda {
class GpuKeepWarm {};  // never made without CUDA; defined so that the graph's pointer to one can be destroyed
}  // namespace vigil::cuda
#endif
#include "pipeline/vibration_stage.hpp"

namespace vigil {
namespace {

// Whether a stage runs as its CUDA twin on this backend (the rest run on the CPU).
bool runs_on_gpu(const StageSettings& s, const GraphBackend& backend) {
#if VIGIL_HAVE_CUDA
  if (!backend.cuda) return false;
  if (s.kind == "fir_bank") return true;
  if (s.kind == "wavelet_denoise") return DenoiseCudaStage::fits(std::get<DenoiseStageSettings>(s.params));
  if (s.kind == "ae_hits") return backend.gpu_resident && AeHitsCudaStage::fits(std::get<AeHitSettings>(s.params));
  if (s.kind == "vibration")
    return backend.gpu_resident && VibrationCudaStage::fits(std::get<VibrationStageSettings>(s.params));
  // band_rms: chosen at prepare(), where the outputs are known (Graph::prepare).
#else
  (void)s;
  (void)backend;  // every stage runs on the CPU in a build without CUDA
#endif
  return false;
}

// The CPU stages that split their lanes over the worker pool.
bool splits_lanes_on_cpu(const StageSettings& s, const GraphBackend& backend) {
  return !runs_on_gpu(s, backend) &&
         (s.kind == "fir_bank" || s.kind == "wavelet_denoise" || s.kind == "vibration" || s.kind == "ae_hits");
}

}  // namespace

Graph::Graph(const std::vector<StageSettings>& stages, GraphBackend backend)
    : gpu_resident_(backend.cuda && backend.gpu_resident), mapped_(backend.mapped), cpu_threads_(backend.cpu_threads),
      busy_poll_(backend.busy_poll), keep_gpu_warm_(backend.keep_gpu_warm) {
  // The worker pool, when some stage will split its lanes over it on the CPU.
  for (const StageSettings& s : stages)
    if (splits_lanes_on_cpu(s, backend) && backend.cpu_threads > 1 && !pool_)
      pool_ = std::make_unique<WorkerPool>(backend.cpu_threads, backend.busy_poll, "vigil-work");
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageSettings& s = stages[i];
    Node n;
    n.name = s.name;
    n.input = s.input;
    n.optional = s.optional;
#if VIGIL_HAVE_CUDA
    const CudaStageOptions cuda_options{backend.mapped, backend.fail_at_chunk, backend.graphs, backend.detector_graphs};
    const bool gpu = runs_on_gpu(s, backend);
    if (gpu && s.kind == "fir_bank")
      n.stage = std::make_unique<FirBankCudaStage>(std::get<FirBankSettings>(s.params), uint16_t(i),
                                                   cuda_options);
    else if (gpu && s.kind == "wavelet_denoise")
      n.stage = std::make_unique<DenoiseCudaStage>(std::get<DenoiseStageSettings>(s.params), uint16_t(i),
                                                   cuda_options);
    else if (gpu && s.kind == "ae_hits")
      n.stage = std::make_unique<AeHitsCudaStage>(std::get<AeHitSettings>(s.params), uint16_t(i),
                                                  cuda_options);
    else if (gpu && s.kind == "vibration")
      n.stage = std::make_unique<VibrationCudaStage>(std::get<VibrationStageSettings>(s.params), uint16_t(i),
                                                     cuda_options, pool_.get());
    else if (s.kind == "band_rms" && backend.cuda && backend.gpu_resident && !backend.mapped)
      n.remake = [settings = std::get<BandRmsSettings>(s.params), index = uint16_t(i),
                  options = cuda_options](bool on_gpu) -> std::unique_ptr<Stage> {
        if (on_gpu) return std::make_unique<BandRmsCudaStage>(settings, index, options);
        return std::make_unique<BandRmsStage>(settings, index);
      };
    n.on_gpu = gpu;
#endif
    if (!n.stage) {  // not a CUDA stage (made above)
      if (n.remake)
        n.stage = n.remake(false);  // band_rms: the CPU stage until prepare() chooses
      else if (s.kind == "fir_bank")
        n.stage = std::make_unique<FirBankStage>(std::get<FirBankSettings>(s.params), pool_.get());
      else if (s.kind == "wavelet_denoise")
        n.stage = std::make_unique<DenoiseStage>(std::get<DenoiseStageSettings>(s.params), pool_.get());
      else if (s.kind == "band_rms")
        n.stage = std::make_unique<BandRmsStage>(std::get<BandRmsSettings>(s.params), uint16_t(i));
      else if (s.kind == "ae_hits")
        n.stage = std::make_unique<AeHitsStage>(std::get<AeHitSettings>(s.params), uint16_t(i), pool_.get());
      else if (s.kind == "vibration")
        n.stage = std::make_unique<VibrationStage>(std::get<VibrationStageSettings>(s.params), uint16_t(i), pool_.get());
      else
        throw std::invalid_argument("stage '" + s.name + "': unknown kind '" + s.kind + "'");
    }
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
    nodes_.push_back(std::move(n));
  }
}

Graph::~Graph() = default;

void Graph::keep_gpu_warm() noexcept {
#if VIGIL_HAVE_CUDA
  if (keep_warm_) keep_warm_->ping(mono_now_ns());
#endif
}

Graph::KeepWarmCounts Graph::keep_warm_counts() const noexcept {
  KeepWarmCounts c;
#if VIGIL_HAVE_CUDA
  if (keep_warm_) c = {true, keep_warm_->interval_ns(), keep_warm_->rounds(), keep_warm_->errors()};
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
      n.on_gpu = gpu;
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    n.input_stream = find_stream(n.input);
    if (n.input_stream < 0)
      throw std::invalid_argument("stage '" + n.name + "': input '" + n.input + "' is not an earlier sample stream");
    const Stream& input_stream = streams_[size_t(n.input_stream)];
    if (input_stream.stage_owned) n.stage->bind_input(input_stream.block.data);
    n.producer = input_stream.producer;
    if (n.producer >= 0 && gpu_resident_) n.stage->bind_producer(nodes_[size_t(n.producer)].stage.get());
    const bool keep = output_stays_on_device(i, host_streams, false);
    n.stage->keep_output_on_device(keep);
    const StreamFormat out = n.stage->prepare(input_stream.format, max_frames);
    n.output_stream = out.bands > 0 ? add_stream(n.name, out, n.stage->output_buffer()) : -1;
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
      if (float* staged = nodes_[i].stage->input_buffer()) {
        streams_[0].block.data = staged;
        if (float* second = nodes_[i].stage->input_slot(1)) {
          look_ahead_stage_ = int(i);
          next_input_ = streams_[0].block;
          next_input_.data = second;
        }
        break;
      }
#if VIGIL_HAVE_CUDA
  bool any_on_gpu = false;
  for (const Node& n : nodes_) any_on_gpu = any_on_gpu || n.on_gpu;
  if (keep_gpu_warm_ && any_on_gpu && !keep_warm_) keep_warm_ = std::make_unique<cuda::GpuKeepWarm>();
#endif
}

bool Graph::output_stays_on_device(size_t i, const std::vector<std::string>* host_streams,
                                   bool choosing) const noexcept {
  if (!host_streams || !gpu_resident_ || mapped_) return false;  // mapped: the kernels write the host anyway
  for (const std::string& name : *host_streams)
    if (name == nodes_[i].name) return false;
  for (size_t j = i + 1; j < nodes_.size(); ++j)
    if (nodes_[j].input == nodes_[i].name && !(choosing && nodes_[j].remake) && nodes_[j].stage->needs_host_input())
      return false;
  return true;
}

bool Graph::upload_next_input(const void* raw, uint32_t frames_up) noexcept {
  if (look_ahead_stage_ < 0) return false;
  return nodes_[size_t(look_ahead_stage_)].stage->upload_input(input_slot_ ^ 1u, next_input_.frames, raw, frames_up);
}

bool Graph::upload_next_input_part(const void* raw, uint32_t first, uint32_t frames) noexcept {
  if (look_ahead_stage_ < 0 || !raw_input_) return false;
  return nodes_[size_t(look_ahead_stage_)].stage->upload_input_part(input_slot_ ^ 1u, raw, first, frames);
}

bool Graph::take_raw_input(SampleFormat format, float scale) {
  if (look_ahead_stage_ < 0 || input_on_host_ || mapped_) return false;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].input_stream == 0 && int(i) != look_ahead_stage_) return false;  // another reads it on the host
  raw_input_ = nodes_[size_t(look_ahead_stage_)].stage->accept_raw_input(format, scale);
  return raw_input_;
}

void Graph::input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept {
  clipped = non_finite = 0;
  if (raw_input_) nodes_[size_t(look_ahead_stage_)].stage->input_counts(clipped, non_finite);
}

void Graph::advance_input() noexcept {
  if (look_ahead_stage_ < 0) return;
  std::swap(streams_[0].block, next_input_);
  input_slot_ ^= 1u;
}

StageStatus Graph::run(const Exec& exec) noexcept {
  const uint32_t frames = streams_[0].block.frames;
  StageStatus result = StageStatus::kOk;
  slowest_ = {};
  int64_t t = mono_now_ns();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.optional && shed_) continue;
    if (n.optional && test_optional_cost_ns_ > 0) sleep_until_mono_ns(mono_now_ns() + test_optional_cost_ns_);
    const Block& in = streams_[size_t(n.input_stream)].block;
    Block& out = n.output_stream >= 0 ? streams_[size_t(n.output_stream)].block : n.scratch;
    out.frames = frames;
    // A reader on the host of a stream kept on the device (a CUDA stage now on its CPU twin):
    // the copy back first. Failing that, the chunk is lost to this stage: a failure.
    bool ok = true;
    if (n.producer >= 0 && n.stage->needs_host_input())
      ok = nodes_[size_t(n.producer)].stage->make_output_host_valid(frames);
    if (!ok || n.stage->process(in, out, exec) != StageStatus::kOk) result = StageStatus::kFailed;
    const int64_t t1 = mono_now_ns();
    n.time->record_ns(t1 - t);
    if (t1 - t > slowest_.ns) slowest_ = {int(i), t1 - t};
    t = t1;
  }
  return result;
}

StageUpdatePlan Stage::plan_update(const StageSettings&) const {
  StageUpdatePlan plan;
  plan.structural = true;
  plan.why = "its settings changed";
  return plan;
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
