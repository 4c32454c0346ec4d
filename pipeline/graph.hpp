// Graph: the stages a config declares, in order, with their output buffers. Built and prepared on
// the main thread; run() on the pipeline thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.hpp"
#include "core/latency_histogram.hpp"
#include "core/worker_pool.hpp"
#include "stages/stage.hpp"

namespace vigil {

// Which stages run on the GPU: with cuda, every stage that has a CUDA twin (fir_bank;
// wavelet_denoise with windows up to 4096; with gpu_resident, ae_hits without transient capture).
struct GraphBackend {
  bool cuda = false;
  bool mapped = false;         // zero-copy staging
  uint64_t fail_at_chunk = 0;  // test-only fault (pipeline.test_cuda_fail_at_chunk)
  bool busy_poll = false;      // the pool's helpers spin between chunks
  uint32_t cpu_threads = 1;    // threads for the CPU stages that split their lanes (fir_bank,
                               // wavelet_denoise, vibration, ae_hits)
  // pipeline.gpu_resident (the service's default; off here unless asked): ae_hits on the GPU too,
  // and CUDA stages read each other's output on the device (GpuStage::bind_producer,
  // keep_output_on_device).
  bool gpu_resident = false;
  // pipeline.cuda_graphs: the FIR stages replay full chunks as CUDA graphs; the detector stages
  // (MomentsCudaStage: vibration, band_rms) too where detector_graphs.
  bool graphs = true;
  bool detector_graphs = false;
  // pipeline.gpu_keep_warm: with a CUDA stage, keep_gpu_warm() queues a little GPU work at an
  // interval while the pipeline thread waits (cuda::GpuKeepWarm).
  bool keep_gpu_warm = false;
  // pipeline.gpus resolved (StageBackend::devices): two or more split the CUDA stages' channels.
  std::vector<int> devices;
};

namespace cuda {
class GpuKeepWarm;
}
class ChannelSplitStage;

class Graph {
 public:
  // Builds (but does not prepare) the stages of `settings`. Throws on an unknown kind.
  explicit Graph(const std::vector<StageSettings>& stages, GraphBackend backend = {});
  // Stages made elsewhere (tests of the graph's own logic): name, input stream, stage, in order.
  struct Made {
    std::string name, input;
    std::unique_ptr<Stage> stage;
  };
  Graph(std::vector<Made> stages, GraphBackend backend);
  ~Graph();

  // Prepares every stage for `input` and allocates all buffers. Off the real-time path.
  // host_streams: the streams something outside the graph reads on the host (the data outputs);
  // a CUDA stage whose stream is not among them and whose readers all take it on the device keeps
  // it there (GpuStage::keep_output_on_device), and that stream's block is then not kept up to date
  // on the host. Null: every stream is kept on the host.
  void prepare(const StreamFormat& input, uint32_t max_frames, const std::vector<std::string>* host_streams = nullptr);

  // The block the pipeline converts each chunk into (stream "input").
  Block& input_block() noexcept { return streams_[0].block; }
  // The look-ahead, where the stage reading the input offers a second staged input
  // (GpuStage::input_slot): while a chunk runs, the pipeline may convert the next one into
  // next_input_block() and start its upload (upload_next_input()); advance_input() then makes that
  // block the input for the next run(). Off the path of run(); pipeline thread.
  bool look_ahead() const noexcept { return look_ahead_stage_ >= 0; }
  Block& next_input_block() noexcept { return next_input_; }
  // raw: the next chunk's interleaved samples in raw-input mode (next_input_block() is then only
  // its frame count), else null. frames_up: its first frames already on their way (below).
  bool upload_next_input(const void* raw = nullptr, uint32_t frames_up = 0) noexcept;
  // Raw input, while the next chunk is still being captured: its complete frames [first, first +
  // frames) start their way to the device (GpuStage::upload_input_part); false: they did not.
  bool upload_next_input_part(const void* raw, uint32_t first, uint32_t frames) noexcept;
  void advance_input() noexcept;
  unsigned next_input_slot() const noexcept { return input_slot_ ^ 1u; }  // the staged input next_input_block() is
  // Raw input (main thread, after prepare): where the only reader of the input is a CUDA stage
  // that converts on the device (GpuStage::accept_raw_input), no output sends the input and the
  // memory is copy mode, each chunk goes to the graph as captured (Exec::raw_input): no conversion
  // on the host, half the bytes over the bus for int16. Returns whether it is on.
  bool take_raw_input(SampleFormat format, float scale);
  bool raw_input() const noexcept { return raw_input_; }
  // The last run's clipped and non-finite input samples, counted by that conversion (raw input).
  void input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept;
  // The CPU stages' worker pool (null: none), which the pipeline thread may also split its own
  // per-chunk work over between runs (the conversion, the copies into the output slot). Where no
  // stage splits its lanes on the CPU, prepare() makes one for that work alone when a chunk holds
  // kSplitSamples samples or more (below, waking the helpers costs more than it saves).
  WorkerPool* pool() const noexcept { return pool_.get(); }
  static constexpr uint64_t kSplitSamples = 32768;

  // While the pipeline thread waits for a chunk (GraphBackend::keep_gpu_warm, and a CUDA stage):
  // a few bytes of GPU work every 0.5 ms, so the GPU's engines are awake when the chunk comes.
  // RT-safe; a no-op otherwise (not even a clock read).
  void keep_gpu_warm() noexcept;
  struct KeepWarmCounts {
    bool on = false;
    int64_t interval_ns = 0;
    uint32_t devices = 0;             // the GPUs kept warm
    uint64_t rounds = 0, errors = 0;  // summed over them
  };
  KeepWarmCounts keep_warm_counts() const noexcept;  // any thread

  // Runs every stage on input_block() (frames already set), in two phases where a stage queues
  // GPU work (GpuStage::two_phase): start() runs the stages up to the first whose work it queued
  // and returns kGpuBusy; the pipeline thread then has the wait (the look-ahead: gpu_busy() polls
  // it; no stage is on its stack) and calls resume(), which completes that stage and goes on to
  // the next such wait or the end (kDone). result(): kFailed when any stage failed. RT-safe.
  // Times every stage (stage_time(), the wait included) and notes the slowest of this run.
  enum class Step { kDone, kGpuBusy };
  Step start(const Exec& exec) noexcept;
  Step resume(const Exec& exec) noexcept;
  bool gpu_busy() noexcept;
  StageStatus result() const noexcept { return result_; }
  // The whole run: start() and resume() until done, calling on_wait() at each wait.
  template <class OnWait>
  StageStatus run(const Exec& exec, OnWait&& on_wait) noexcept {
    for (Step s = start(exec); s == Step::kGpuBusy; s = resume(exec)) on_wait();
    return result_;
  }
  StageStatus run(const Exec& exec) noexcept {
    return run(exec, [] {});
  }
  struct Slowest {
    int stage = -1;
    int64_t ns = 0;
  };
  Slowest slowest_of_last_run() const noexcept { return slowest_; }
  // Per-stage processing time per chunk (recorded on the pipeline thread, read anywhere).
  const LatencyHistogram& stage_time(size_t i) const noexcept { return *nodes_[i].time; }

  void reset() noexcept;
  // Overload: while shed, `optional` stages are skipped (pipeline thread); restoring resets them
  // so they start clean rather than from a gap.
  void set_shed(bool shed) noexcept;
  bool shed() const noexcept { return shed_; }
  std::vector<std::string> optional_stages() const;
  // Test-only fault: every optional stage (while not shed) takes this much longer per chunk.
  void set_test_optional_cost_ns(int64_t ns) noexcept { test_optional_cost_ns_ = ns; }

  // Releases every latched alarm. Pipeline thread.
  void acknowledge() noexcept;

  // A reload. Main thread: plans the change from `current` (what this graph was built from) to
  // `next`; null with `why` set when it changes the structure (stages added, removed, renamed,
  // re-wired, or changed beyond coefficients and thresholds). Pipeline thread: applies it to
  // every stage; returns the index of the first stage that could not (Stage::apply_update), or -1.
  struct Update {
    std::vector<std::unique_ptr<StageUpdate>> stages;  // per stage; null: unchanged
  };
  std::unique_ptr<Update> plan_update(const std::vector<StageSettings>& current, const std::vector<StageSettings>& next,
                                      std::string& why) const;
  int apply_update(Update& update) noexcept;

  // Sample streams: index 0 is "input", then every stage that outputs samples.
  struct Stream {
    std::string name;
    StreamFormat format;
    Block block;
    bool stage_owned = false;  // block.data is its stage's output_buffer() (page-locked)
    int producer = -1;         // the node that writes it (-1: the input)
    bool on_device_only = false;  // its stage keeps it on the device (see prepare)
  };
  size_t stream_count() const noexcept { return streams_.size(); }
  const Stream& stream(size_t i) const noexcept { return streams_[i]; }
  // Index of a sample stream by name, or -1.
  int find_stream(const std::string& name) const noexcept;

  size_t stage_count() const noexcept { return nodes_.size(); }
  const std::string& stage_name(size_t i) const noexcept { return nodes_[i].name; }
  const Stage& stage(size_t i) const noexcept { return *nodes_[i].stage; }
  // Index of a stage by name, or -1; the format of its input stream.
  int find_stage(const std::string& name) const noexcept;
  const StreamFormat& stage_input_format(size_t i) const noexcept { return streams_[size_t(nodes_[i].input_stream)].format; }
  // Band name of lane `band` of stage i's input (for event text).
  const std::string& stage_input_band_name(size_t i, size_t band) const noexcept;

 private:
  struct Node {
    std::string name;
    std::string input;
    std::unique_ptr<Stage> stage;
    GpuStage* gpu = nullptr;  // the stage's GpuStage part (a CUDA stage), found when it is made
    int input_stream = -1;
    int output_stream = -1;  // -1 for detectors
    int producer = -1;       // the node whose output is this node's input (-1: the input stream)
    StreamFormat events_format;      // what prepare() returned where the stage gives events only
    bool events_only_input = false;  // it reads an earlier stage's events: not run here
    Block scratch;           // output block handed to detectors (empty)
    std::unique_ptr<LatencyHistogram> time = std::make_unique<LatencyHistogram>();
    bool optional = false;
    bool on_gpu = false;  // the stage is a CUDA stage
    ChannelSplitStage* split = nullptr;  // a stage split by channels over pipeline.gpus
    bool two_phase = false;  // its GPU work in two phases (GpuStage::two_phase)
    // A stage whose device is chosen at prepare() (band_rms: Graph::prepare): makes it for the
    // GPU or the CPU. Null for the others.
    std::function<std::unique_ptr<Stage>(bool gpu)> remake;
  };
  // Whether node i's output may stay on the device: nothing outside reads it on the host, and every
  // stage that reads it takes it on the device (choosing: a stage whose device prepare() is still
  // choosing counts as one that would).
  bool output_stays_on_device(size_t i, const std::vector<std::string>* host_streams, bool choosing) const noexcept;
  // Whether a node's stage reads its input on the host (every stage but a CUDA one that says not).
  static bool needs_host_input(const Node& n) noexcept { return !n.gpu || n.gpu->needs_host_input(); }
  // The run under way (start(), resume()): the next node, the input's frames, the time its stage
  // began, the result so far.
  Step advance(const Exec& exec) noexcept;  // from next_node_ on, to the next wait or the end
  void timed(size_t node) noexcept;         // node's time, from run_t_ to now
  const Block& input_of(const Node& n) const noexcept { return streams_[size_t(n.input_stream)].block; }
  Block& output_of(Node& n) noexcept { return n.output_stream >= 0 ? streams_[size_t(n.output_stream)].block : n.scratch; }
  size_t next_node_ = 0;
  uint32_t run_frames_ = 0;
  int64_t run_t_ = 0;
  StageStatus result_ = StageStatus::kOk;
  std::unique_ptr<WorkerPool> pool_;  // before nodes_: the stages hold it, so it must outlive them
  bool shed_ = false;
  bool gpu_resident_ = false, mapped_ = false;
  uint32_t cpu_threads_ = 1;
  bool busy_poll_ = false;
  bool keep_gpu_warm_ = false;
  // prepare(): where keep_gpu_warm_, one per device a stage runs on (the current device for the
  // whole CUDA stages, each device of a split's GPU parts), with the device made current for its
  // pings (-1: the current one already).
  struct WarmDevice {
    int scope_device = -1;
    std::unique_ptr<cuda::GpuKeepWarm> warm;
  };
  std::vector<WarmDevice> keep_warm_;
  int look_ahead_stage_ = -1;  // the stage whose second input slot the look-ahead fills
  bool input_on_host_ = true;  // prepare(): something outside the graph reads the input stream
  bool raw_input_ = false;
  unsigned input_slot_ = 0;    // the slot input_block() is now
  Block next_input_;           // the other slot
  int64_t test_optional_cost_ns_ = 0;
  Slowest slowest_;
  std::vector<Node> nodes_;
  std::vector<Stream> streams_;
  std::vector<std::vector<float>> buffers_;  // one per stream
};

}  // namespace vigil
