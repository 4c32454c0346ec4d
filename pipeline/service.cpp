#include "pipeline/service.hpp"

#if VIGIL_HAVE_ALSA
#include "acquisition/alsa_source.hpp"
#endif

#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>

#include "core/clock.hpp"

#include <chrono>
#include <thread>

#include <sstream>
#include <stdexcept>

#include "acquisition/file_source.hpp"
#include "acquisition/iio_source.hpp"
#include "acquisition/vita49_source.hpp"
#include "core/out_of_memory.hpp"
#if VIGIL_HAVE_CUDA
#include "cuda/cuda_check.hpp"
#include "cuda/pinned_buffer.hpp"
#endif
#include "acquisition/synthetic_source.hpp"
#include "config/config_loader.hpp"
#include "dsp/real_fft.hpp"
#include "core/thread_name.hpp"

namespace vigil {
namespace {

// Chunk memory the GPU copies from directly (raw input); plain host memory in a build without CUDA
// (where raw input never happens).
HostAllocator page_locked_allocator() {
#if VIGIL_HAVE_CUDA
  return {[](size_t bytes) -> void* {
            void* p = nullptr;
            if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
              cudaGetLastError();
              return nullptr;
            }
            return p;
          },
          [](void* p) { cudaFreeHost(p); }, "page-locked"};
#else
  return aligned_host_allocator();
#endif
}

}  // namespace

std::string fft_wisdom_path(const std::string& setting) {
  if (setting == "off") return "";
  if (!setting.empty()) return setting;
  // Under systemd (CacheDirectory=vigil) the cache directory, the first of a list.
  const char* cache = std::getenv("CACHE_DIRECTORY");
  if (!cache || !*cache) return "";
  const std::string dir(cache);
  return dir.substr(0, dir.find(':')) + "/fftwf.wisdom";
}

namespace {
constexpr size_t kEventQueueCapacity = 16384;  // AE hit storms: ~3 MiB of records
}

Service::Service(const Settings& settings) : settings_(settings) {
  // The backend: cuda when asked for (a clear error without a usable GPU), auto = cuda when this
  // build has CUDA and a device answers, else cpu.
  GraphBackend graph_backend;
  const PipelineSettings& ps = settings_.pipeline;
#if VIGIL_HAVE_CUDA
  std::string no_gpu;
  const bool gpu = ps.backend != "cpu" && cuda::device_available(&no_gpu);
  if (ps.backend == "cuda" && !gpu)
    throw std::runtime_error("pipeline.backend: cuda, but no CUDA device can be used (" + no_gpu +
                             "); use 'auto' to fall back to the CPU");
  graph_backend.cuda = gpu;
  graph_backend.mapped = gpu && (ps.memory == "mapped" || (ps.memory == "auto" && cuda::device_is_integrated()));
  graph_backend.fail_at_chunk = ps.test_cuda_fail_at_chunk;
  graph_backend.gpu_resident = gpu && ps.gpu_resident;
  graph_backend.graphs = ps.cuda_graphs != "off";
  graph_backend.detector_graphs = ps.cuda_graphs == "all";
  if (gpu) {
    const int count = cuda::device_count();
    if (ps.gpus_auto)
      for (int d = 0; d < count; ++d) graph_backend.devices.push_back(d);
    for (int d : ps.gpus)
      if (d >= count)
        throw std::runtime_error("pipeline.gpus lists device " + std::to_string(d) + ", but this host has " +
                                 std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") + " (0.." +
                                 std::to_string(count - 1) + ")");
    if (!ps.gpus_auto) graph_backend.devices = ps.gpus;
  }
#else
  if (ps.backend == "cuda")
    throw std::runtime_error("pipeline.backend: cuda, but this build has no CUDA (configure with a CUDA toolkit)");
#endif
  // On the CPU backend a list of two or more still splits the stages' channels into as many parts,
  // run one after the other: the same outputs (how the split is tested without GPUs).
  if (!graph_backend.cuda && ps.gpus.size() >= 2) graph_backend.devices.assign(ps.gpus.size(), -1);
  graph_backend.cpu_threads = ps.threads ? ps.threads : WorkerPool::default_threads();
  graph_backend.busy_poll = ps.busy_poll;
  graph_backend.keep_gpu_warm = ps.gpu_keep_warm == "true" || (ps.gpu_keep_warm == "auto" && ps.busy_poll);
  backend_ = graph_backend.cuda ? "cuda" : "cpu";
  memory_ = graph_backend.cuda ? (graph_backend.mapped ? "mapped" : "copy") : "";

  if (settings_.source_kind == "file") {
    auto file = std::make_unique<FileSource>(settings_.file);
    source_warnings_ = file->info().cuts;
    source_ = std::move(file);
  }
#if VIGIL_HAVE_IIO
  else if (settings_.source_kind == "iio") {
    auto iio = std::make_unique<IioSource>(settings_.iio);
    source_notes_ = iio->description();
    source_ = std::move(iio);
  }
#endif
  else if (settings_.source_kind == "vita49") {
    auto vita49 = std::make_unique<Vita49Source>(settings_.vita49);
    source_notes_ = vita49->describe();
    source_ = std::move(vita49);
  }
#if VIGIL_HAVE_ALSA
  else if (settings_.source_kind == "alsa") {
    auto alsa = std::make_unique<AlsaSource>(settings_.alsa);
    source_notes_ = alsa->negotiation();
    source_ = std::move(alsa);
  }
#endif
  else
    source_ = std::make_unique<SyntheticSource>(settings_.synthetic);
  format_ = source_->format();
  const size_t chunk_bytes = size_t(format_.chunk_frames) * format_.channels * bytes_per_sample(format_.format);

  // FFTW wisdom: plans chosen on an earlier start (fft_planning measure or patient) load at once,
  // and what this start planned is saved for the next.
  const std::string wisdom = fft_wisdom_path(settings_.pipeline.fft_wisdom);
  if (!wisdom.empty()) {
    std::string why;
    wisdom_notes_.push_back(fft_import_wisdom(wisdom, why) ? "fftw wisdom: loaded from " + wisdom
                                                           : "fftw wisdom: none loaded (" + why + ")");
  }
  graph_ = std::make_unique<Graph>(settings_.stages, graph_backend);
  StreamFormat input;
  input.rate_hz = format_.rate_hz;
  input.channels = format_.channels;
  // The streams the data outputs send are read on the host; the others may stay on the GPU.
  std::vector<std::string> sent;
  for (const DataOutputSettings& d : settings_.data_outputs) sent.push_back(d.stream);
  graph_->prepare(input, format_.chunk_frames, &sent);
  // Nothing reads the input on the host and the first stage converts on the GPU: chunks go there
  // as captured. On the CUDA backend the chunks are page-locked, so that copy runs on its own at
  // full speed; where that much memory cannot be locked, plain host memory (slower copies, the
  // same results; the start-up line names the memory).
  // The pipeline then holds a chunk until the graph has run, and the look-ahead a second one: only
  // with a pool that leaves the capture thread room beside them.
  const uint32_t pool_chunks = settings_.pipeline.pool_chunks;
  if (pool_chunks >= 4) graph_->take_raw_input(format_.format, format_.scale);
  if (graph_backend.cuda) {
    try {
      pool_ = std::make_unique<ChunkPool>(pool_chunks, chunk_bytes, page_locked_allocator());
    } catch (const OutOfMemory& e) {
      wisdom_notes_.push_back(std::string(e.what()) +
                              ": the chunks are in plain memory (slower copies to the GPU; the same results)");
    }
  }
  if (!pool_) pool_ = std::make_unique<ChunkPool>(pool_chunks, chunk_bytes);
  free_chunks_ = std::make_unique<SpscQueue<Chunk*>>(pool_chunks);
  full_chunks_ = std::make_unique<SpscQueue<Chunk*>>(pool_chunks);
  for (uint32_t i = 0; i < pool_chunks; ++i) free_chunks_->push(&pool_->chunk(i));
  if (!wisdom.empty()) {
    std::string why;
    if (!fft_export_wisdom(wisdom, why)) wisdom_notes_.push_back("fftw wisdom: not saved (" + why + ")");
  }

  std::vector<int> stream_of_output;
  std::vector<uint32_t> decimation_of_output;
  for (const DataOutputSettings& d : settings_.data_outputs) {
    decimation_of_output.push_back(d.decimation);
    const int s = graph_->find_stream(d.stream);
    const int st = graph_->find_stage(d.stream);
    if (s < 0 && (st < 0 || !waveforms_of(graph_->stage(size_t(st)))))
      throw std::runtime_error("outputs: stream '" + d.stream + "' does not exist");
    stream_of_output.push_back(s);  // -1: a detector's hit waveforms
  }

  const uint32_t n_slots = settings_.pipeline.output_slots;
  slots_.resize(n_slots);
  free_slots_ = std::make_unique<SpscQueue<OutputSlot*>>(n_slots);
  full_slots_ = std::make_unique<SpscQueue<OutputSlot*>>(n_slots);
  for (OutputSlot& slot : slots_) {
    slot.stride = format_.chunk_frames;
    for (int s : stream_of_output) {
      if (s < 0) {
        slot.data.emplace_back();
        continue;
      }
      const StreamFormat& f = graph_->stream(size_t(s)).format;
      slot.data.emplace_back(size_t(f.bands) * f.channels * format_.chunk_frames, 0.0f);
    }
    free_slots_->push(&slot);
  }
  events_ = std::make_unique<SpscQueue<EventRecord>>(kEventQueueCapacity);

  capture_ = std::make_unique<CaptureLoop>(*source_, *free_chunks_, *full_chunks_, chunk_bytes);
  pipeline_ = std::make_unique<PipelineWorker>(*graph_, format_, *capture_, *full_chunks_, *free_chunks_, *free_slots_,
                                               *full_slots_, *events_, stream_of_output, decimation_of_output);
  pipeline_->set_stall_after_ns(int64_t(settings_.pipeline.test_stall_after_s * 1e9));
  pipeline_->set_busy_poll(settings_.pipeline.busy_poll);
  pipeline_->set_wait_for_output(!source_->paced());
  // Raw input from a paced source: the chunk being captured goes to the GPU in the parts the
  // source publishes (pipeline.upload_in_parts), so only its last part is left when it is complete.
  if (settings_.pipeline.upload_in_parts && source_->paced() && pipeline_->set_upload_in_parts(true))
    capture_->track_progress();
  pipeline_->set_test_chunk_cost(int64_t(settings_.pipeline.test_chunk_cost_ms * 1e6),
                                 int64_t(settings_.pipeline.test_chunk_cost_for_s * 1e9));

  OutputWorker::Options opt;
  opt.rate_hz = format_.rate_hz;
  opt.busy_poll = settings_.pipeline.busy_poll;
  opt.send_threads = settings_.pipeline.send_threads;
  double budget_ms = settings_.pipeline.deadline_budget_ms;
  if (budget_ms <= 0) {
    const double factor = settings_.synthetic.rate_factor > 0 ? settings_.synthetic.rate_factor : 1.0;
    budget_ms = 1e3 * format_.chunk_frames / format_.rate_hz / factor;  // one chunk period, as paced
  }
  opt.deadline_budget_ns = int64_t(budget_ms * 1e6);
  pipeline_->set_overload_policy(settings_.pipeline.overload == "shed", opt.deadline_budget_ns,
                                 int64_t(settings_.pipeline.overload_restore_s * 1e9));
  graph_->set_test_optional_cost_ns(int64_t(settings_.pipeline.test_optional_cost_ms * 1e6));
  opt.status_fields = [this] { return status_json(); };
  // With a recorder, the output thread also waits for its last events (the files' close).
  opt.upstream_finished = [this] { return pipeline_->finished() && (!recorder_ || recorder_->finished()); };
  opt.source_down = [this] { return source_->down(); };
  opt.source_kind = std::string(source_->kind());
  output_ = std::make_unique<OutputWorker>(settings_, *graph_, stream_of_output, *full_slots_, *free_slots_,
                                           *events_, std::move(opt));
  if (settings_.record.enabled) {
    std::string description = std::string(source_->kind()) + " source";
    if (settings_.source_kind == "alsa") description += " " + settings_.alsa.device;
    if (settings_.source_kind == "file") description += " " + settings_.file.path;
    if (!source_notes_.empty()) description += "; " + source_notes_;
    recorder_ = std::make_unique<Recorder>(settings_.record, format_, settings_.config_sha256, description,
                                           [this](const std::string& type, nlohmann::json body) {
                                             output_->post_event(type, std::move(body));
                                           });
    pipeline_->set_recorder(recorder_.get());
  }
  if (settings_.health.enabled)
    health_ = std::make_unique<HealthMonitor>(settings_.health, [this](const std::string& type, nlohmann::json body) {
      output_->post_event(type, std::move(body));
    });
}

Service::~Service() {
  request_stop();
  join();
  unapplied_.clear();  // the pipeline thread has ended: nothing can take them any more
}

std::vector<std::string> Service::start() {
  std::vector<std::string> notes = wisdom_notes_;
  if (health_) {
    health_->start();
    notes.insert(notes.end(), health_->start_notes().begin(), health_->start_notes().end());
  }
  // Named for top -H, perf and gdb (the pools name their helpers likewise: vigil-work-N, ...).
  output_thread_ = std::thread([this] {
    name_this_thread("vigil-output");
    output_->run();
    output_done_.store(true, std::memory_order_release);
  });
  if (recorder_)
    recorder_thread_ = std::thread([this] {
      name_this_thread("vigil-recorder");
      recorder_->run([this] { return pipeline_->finished(); });
    });
  pipeline_thread_ = std::thread([this] {
    name_this_thread("vigil-pipeline");
    pipeline_->run();
  });
  capture_thread_ = std::thread([this] {
    name_this_thread("vigil-capture");
    capture_->run();
  });
  const PipelineSettings& p = settings_.pipeline;
  if (p.realtime_priority > 0) {
    sched_param sp{};
    sp.sched_priority = p.realtime_priority;
    const int err = pthread_setschedparam(capture_thread_.native_handle(), SCHED_FIFO, &sp);
    notes.push_back(err ? "capture thread: SCHED_FIFO priority " + std::to_string(p.realtime_priority) +
                              " not permitted (" + std::strerror(err) + "): running without it"
                        : "capture thread: SCHED_FIFO priority " + std::to_string(p.realtime_priority));
  }
  if (p.capture_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(p.capture_cpu, &set);
    const int err = pthread_setaffinity_np(capture_thread_.native_handle(), sizeof set, &set);
    notes.push_back(err ? "capture thread: CPU " + std::to_string(p.capture_cpu) + " not permitted (" +
                              std::strerror(err) + "): running without affinity"
                        : "capture thread: pinned to CPU " + std::to_string(p.capture_cpu));
  }
  return notes;
}

void Service::request_stop() noexcept {
  if (capture_) capture_->request_stop();
}

bool Service::finished() const noexcept { return output_done_.load(std::memory_order_acquire); }

void Service::acknowledge_alarms() noexcept {
  if (pipeline_) pipeline_->request_acknowledge();
}

bool Service::update(const Settings& next, std::string& why, uint64_t* from_frame) {
  Settings rest = settings_;  // everything but the stages must be equal
  rest.path = next.path;
  rest.config_sha256 = next.config_sha256;
  rest.stages = next.stages;
  if (!(rest == next)) {
    why = "the source, pipeline or outputs changed";
    return false;
  }
  std::unique_ptr<Graph::Update> u = graph_->plan_update(settings_.stages, next.stages, why);
  if (!u) return false;
  const uint64_t before = pipeline_->applied_updates();
  if (!pipeline_->post_update(u.get())) {
    why = "a previous update is still pending";
    return false;
  }
  // Wait for the pipeline thread to take it between two chunks (it cannot while stalled or after
  // the source ended: then the update is kept, unapplied, until the service is destroyed).
  const int64_t give_up = mono_now_ns() + 5'000'000'000;
  while (pipeline_->applied_updates() == before && mono_now_ns() < give_up && !pipeline_->finished())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (pipeline_->applied_updates() == before) {
    unapplied_.push_back(std::move(u));
    why = "the pipeline did not take the update within 5 s";
    return false;
  }
  if (const int failed = pipeline_->last_update_failed_stage(); failed >= 0) {
    // Out of memory for its new filters: it runs on with its old ones (or some of them), the
    // others with their new settings. Rebuilding applies the new config whole (or brings the old
    // one back).
    why = "stage '" + graph_->stage_name(size_t(failed)) + "' could not take the new settings in place (out of memory)";
    return false;
  }
  settings_.stages = next.stages;
  settings_.path = next.path;
  output_->update_layout(settings_);  // new thresholds for receivers that draw them
  if (recorder_ && settings_.config_sha256 != next.config_sha256) recorder_->rotate_for_config(next.config_sha256);
  settings_.config_sha256 = next.config_sha256;
  if (from_frame) *from_frame = pipeline_->last_update_frame();
  return true;
}

void Service::post_event(const std::string& type, nlohmann::json body) { output_->post_event(type, std::move(body)); }

void Service::join() {
  for (std::thread* t : {&capture_thread_, &pipeline_thread_, &recorder_thread_, &output_thread_})
    if (t->joinable()) t->join();
  if (health_) health_->stop();
}

nlohmann::json Service::status_json() const {
  const CaptureCounters& cap = capture_->counters();
  const PipelineCounters& pc = pipeline_->counters();
  nlohmann::json j;
  j["source"] = {{"kind", std::string(source_->kind())},
                 {"state", capture_->finished() ? "stopped" : source_->down() ? "down" : "running"},
                 {"rate_hz", format_.rate_hz},
                 {"channels", format_.channels},
                 {"overruns", source_->overruns()},
                 {"late_chunks", source_->late_chunks()}};
  for (const auto& [name, value] : source_->counts()) j["source"][name] = value;
  j["backend"] = backend_;
  if (recorder_) j["record"] = recorder_->status_json();
  if (health_) j["health"] = health_->status_json();
  for (size_t i = 0; i < graph_->stage_count(); ++i) {  // detector counters, under the stage's name
    nlohmann::json st = nlohmann::json::object();
    graph_->stage(i).add_status(st);
    if (!st.empty()) j["stages"][graph_->stage_name(i)] = st;
  }
  j["chunks_in"] = cap.chunks_captured.load(std::memory_order_relaxed);
  j["frames_in"] = cap.frames_captured.load(std::memory_order_relaxed);
  j["dropped_chunks"] = cap.chunks_dropped.load(std::memory_order_relaxed);
  j["dropped_frames"] = cap.frames_dropped.load(std::memory_order_relaxed);
  j["read_errors"] = cap.read_errors.load(std::memory_order_relaxed);
  j["chunks_processed"] = pc.chunks_processed.load(std::memory_order_relaxed);
  j["overload"] = {{"policy", settings_.pipeline.overload},
                   {"shedding", pc.shedding.load(std::memory_order_relaxed)},
                   {"episodes", pc.shed_episodes.load(std::memory_order_relaxed)},
                   {"chunks_shed", pc.chunks_shed.load(std::memory_order_relaxed)}};
  // Queue depths from the counters of both ends (a chunk being worked on counts as queued).
  const uint64_t in = cap.chunks_captured.load(std::memory_order_relaxed);
  const uint64_t processed = pc.chunks_processed.load(std::memory_order_relaxed);
  const uint64_t out = output_ ? output_->counters().chunks_sent.load(std::memory_order_relaxed) : 0;
  const uint64_t not_sent = pc.output_chunks_dropped.load(std::memory_order_relaxed);
  j["queues"] = {{"capture_to_pipeline", in >= processed ? in - processed : 0},
                 {"pipeline_to_output", processed >= out + not_sent ? processed - out - not_sent : 0}};
  j["output_dropped_chunks"] = pc.output_chunks_dropped.load(std::memory_order_relaxed);
  j["output_dropped_frames"] = pc.output_frames_dropped.load(std::memory_order_relaxed);
  j["stage_failures"] = pc.stage_failures.load(std::memory_order_relaxed);
  j["clipped_samples"] = pc.clipped_samples.load(std::memory_order_relaxed);
  j["non_finite_samples"] = pc.non_finite_samples.load(std::memory_order_relaxed);
  j["events_dropped"] = pc.events_dropped.load(std::memory_order_relaxed);
  j["clock_steps"] = pc.clock_steps.load(std::memory_order_relaxed);
  j["quiet_handoffs"] = pc.quiet_handoffs.load(std::memory_order_relaxed);
  if (const Graph::KeepWarmCounts kw = graph_->keep_warm_counts(); kw.on)
    j["gpu_keep_warm"] = {{"interval_us", kw.interval_ns / 1000}, {"devices", kw.devices}, {"rounds", kw.rounds},
                          {"errors", kw.errors}};
  j["look_ahead_chunks"] = pc.look_ahead_chunks.load(std::memory_order_relaxed);
  j["chunks_uploaded_in_parts"] = pc.chunks_uploaded_in_parts.load(std::memory_order_relaxed);
  j["frames_uploaded_in_parts"] = pc.frames_uploaded_in_parts.load(std::memory_order_relaxed);
  const LatencyHistogram& w = pc.look_ahead_work;
  j["look_ahead_work_us"] = {{"p50", w.quantile_us(0.5)}, {"p99", w.quantile_us(0.99)}, {"max", w.max_us()}};
  const LatencyHistogram& p = pc.processing;
  j["processing_us"] = {{"p50", p.quantile_us(0.5)}, {"p99", p.quantile_us(0.99)}, {"p999", p.quantile_us(0.999)},
                        {"max", p.max_us()}};
  return j;
}

uint64_t Service::progress() const noexcept {
  return output_->counters().chunks_sent.load(std::memory_order_relaxed);
}

nlohmann::json Service::report() const { return output_->status_json(finished()); }

namespace {
std::string counted(size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }
}  // namespace

namespace {

// "HOST:PORT" ("[V6]:PORT"), and for a multicast group how its datagrams leave.
std::string where_to(const Endpoint& to, const MulticastSettings& m, bool multicast) {
  std::string text = format_endpoint(to);
  if (multicast)
    text += " (multicast, TTL " + std::to_string(m.ttl) + (m.interface.empty() ? "" : ", via " + m.interface) +
            (m.loop ? "" : ", no loop") + ")";
  return text;
}

}  // namespace

std::string Service::describe_outputs() const {
  std::string s = "outputs:";
  const char* sep = " ";
  for (const DataOutputSettings& d : settings_.data_outputs) {
    s += sep + d.stream + " to " + where_to(d.destination, d.multicast, is_multicast_address(d.destination.host));
    sep = ", ";
  }
  for (const EventOutputSettings& e : settings_.event_outputs) {
    s += sep + std::string("events to ") + where_to(e.destination, e.multicast, is_multicast_address(e.destination.host));
    sep = ", ";
  }
  for (const FleetOutputSettings& f : settings_.fleet_outputs) {
    s += sep + std::string("events to NATS stream ") + f.stream + " at " + f.servers.front() +
         (f.servers.size() > 1 ? " (+" + std::to_string(f.servers.size() - 1) + ")" : "");
    sep = ", ";
  }
  return *sep == ' ' ? "no outputs" : s;
}

std::string Service::describe() const {
  std::ostringstream s;
  s << "source " << source_->kind() << " " << format_.channels << " ch @ " << format_.rate_hz << " Hz, "
    << to_string(format_.format) << ", " << format_.chunk_frames << " frames/chunk, pool " << pool_->count()
    << " chunks (" << pool_->allocator_name() << "), backend " << backend_
    << (memory_.empty() ? "" : " (" + memory_ + " memory)") << ", " << counted(graph_->stage_count(), "stage")
    << ", " << counted(settings_.data_outputs.size(), "data output") << ", "
    << counted(settings_.event_outputs.size(), "event output") << ", ";
  if (!settings_.fleet_outputs.empty()) s << counted(settings_.fleet_outputs.size(), "fleet output") << ", ";
  s << fft_library_version();
  if (recorder_) s << ", recording to " << settings_.record.directory;
  if (!source_notes_.empty()) s << "; " << source_notes_;
  return s.str();
}

}  // namespace vigil
