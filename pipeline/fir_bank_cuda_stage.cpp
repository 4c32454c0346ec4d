// RT: process() and apply_update() on the pipeline thread; the rest on the main thread.
#include "pipeline/fir_bank_cuda_stage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "acquisition/rt_log.hpp"
#include "cuda/fault_injection.hpp"
#include "pipeline/cuda_stage_events.hpp"
#include "pipeline/event_record.hpp"
#include "pipeline/fir_bank_stage.hpp"

namespace vigil {


FirBankCudaStage::FirBankCudaStage(FirBankSettings settings, uint16_t index, CudaStageOptions options)
    : settings_(std::move(settings)), index_(index), options_(options) {}

FirBankCudaStage::~FirBankCudaStage() {
  if (stream_) cudaStreamSynchronize(stream_);
  for (const ChunkGraph& g : graphs_) cudaGraphExecDestroy(g.exec);
  bank_.reset();
  next_bank_.reset();
  spare_.reset();
  if (d_in_) cudaFree(d_in_);
  if (d_out_) cudaFree(d_out_);
  if (ev_start_) cudaEventDestroy(ev_start_);
  if (ev_stop_) cudaEventDestroy(ev_stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

StreamFormat FirBankCudaStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  if (in.bands != 1)
    throw std::invalid_argument("fir_bank: input must have 1 band per channel, got " + std::to_string(in.bands));
  rate_hz_ = in.rate_hz;
  channels_ = in.channels;
  bands_ = uint32_t(settings_.bands.size());
  max_frames_ = max_frames;
  const uint32_t max_latency = settings_.max_latency_frames ? settings_.max_latency_frames : max_frames;
  block_ = PartitionedFirBank::uniform_block_within(std::min(max_latency, max_frames));
  const std::vector<std::vector<float>> taps = FirBankStage::design(settings_, in.rate_hz);
  max_taps_ = 0;
  for (const auto& h : taps) max_taps_ = std::max(max_taps_, h.size());

  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_start_));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_stop_));
  bank_ = std::make_unique<cuda::FirBankCuda>(taps, channels_, block_, stream_);
  spare_ = std::make_unique<cuda::FirBankCuda>(taps, channels_, block_, stream_);
  cpu_ = std::make_unique<PartitionedFirBank>(taps, channels_, PartitionedFirBank::uniform(block_));
  const size_t in_floats = size_t(channels_) * max_frames_, out_floats = size_t(bands_) * in_floats;
  h_in_ = cuda::PinnedBuffer(in_floats * sizeof(float), options_.mapped);
  h_out_ = cuda::PinnedBuffer(out_floats * sizeof(float), options_.mapped);
  if (!options_.mapped) {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in_), in_floats * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out_), out_floats * sizeof(float)));
  }
  // Enough input to rebuild the filter state exactly: M - 1 frames of history for the last
  // output the bank still owes, which lags by B.
  // Rounded up to whole blocks, so a primed filter (a reload's spare) is left on a block boundary
  // like the running one, and its chunks replay as a graph too.
  history_frames_ = uint32_t((block_ + max_taps_ - 1 + block_ - 1) / block_ * block_);
  history_.assign(size_t(channels_) * history_frames_, 0.0f);
  history_pos_ = 0;
  prime_.assign(history_.size(), 0.0f);
  scratch_.assign(out_floats, 0.0f);
  fade_.assign(out_floats, 0.0f);
  // Warm-up: the first launches load the kernels and cuFFT's (lazy module loading) — milliseconds
  // that must not fall on the first real chunk. Then back to a clean state.
  VIGIL_CUDA_CHECK(run_gpu(*bank_, prime_.data(), history_frames_, std::min(max_frames_, history_frames_)));
  bank_->reset();
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  // A chunk of whole blocks can be replayed as a graph: capture one per filter. Capturing runs
  // nothing; a failure (a driver that cannot capture cuFFT, a debug-sync build) just leaves the
  // launch-by-launch path.
  if (options_.graphs && max_frames_ % block_ == 0)
    for (const cuda::FirBankCuda* bank : {bank_.get(), spare_.get()}) capture(*bank);
  timing_ = true;

  StreamFormat out = in;
  out.bands = bands_;
  out.band_names.clear();
  for (const BandSettings& b : settings_.bands) out.band_names.push_back(b.name);
  out.delay_frames = in.delay_frames + block_;
  return out;
}

cudaError_t FirBankCudaStage::enqueue(cuda::FirBankCuda& bank, uint32_t frames) noexcept {
  const size_t s = max_frames_;  // the staging stride
  const float* d_in = options_.mapped ? h_in_.device<float>() : d_in_;
  float* d_out = options_.mapped ? h_out_.device<float>() : d_out_;
  if (!options_.mapped)
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(d_in_, s * sizeof(float), h_in_.host(), s * sizeof(float),
                                                 frames * sizeof(float), channels_, cudaMemcpyHostToDevice, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(bank.process(d_in, s, frames, d_out, s));
  if (!options_.mapped)
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(h_out_.host(), s * sizeof(float), d_out_, s * sizeof(float),
                                                 frames * sizeof(float), size_t(bands_) * channels_,
                                                 cudaMemcpyDeviceToHost, stream_));
  return cudaSuccess;
}

bool FirBankCudaStage::capture(const cuda::FirBankCuda& bank) noexcept {
  // enqueue() needs the bank mutable for its host-side fill count, which a whole-block chunk
  // leaves as it found it (0).
  auto& b = const_cast<cuda::FirBankCuda&>(bank);
  if (b.fill() != 0) return false;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cudaError_t e = enqueue(b, max_frames_);
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  if (e == cudaSuccess) e = end;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (e != cudaSuccess || b.fill() != 0) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGetLastError();  // not sticky: leave no error for the next call to find
    return false;
  }
  graphs_.push_back({&bank, exec});
  return true;
}

cudaGraphExec_t FirBankCudaStage::graph_for(const cuda::FirBankCuda& bank) const noexcept {
  for (const ChunkGraph& g : graphs_)
    if (g.bank == &bank) return g.exec;
  return nullptr;
}

cudaError_t FirBankCudaStage::run_gpu(cuda::FirBankCuda& bank, const float* in, size_t in_stride,
                                      uint32_t frames) noexcept {
  const size_t s = max_frames_;  // the staging stride
  float* h_in = h_in_.host<float>();
  for (uint32_t c = 0; c < channels_; ++c) std::memcpy(h_in + c * s, in + c * in_stride, frames * sizeof(float));
  VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_start_, stream_));
  const cudaGraphExec_t graph = frames == max_frames_ && bank.fill() == 0 ? graph_for(bank) : nullptr;
  if (graph) {
    VIGIL_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph, stream_));
    if (timing_) graph_chunks_.fetch_add(1, std::memory_order_relaxed);
  } else {
    VIGIL_CUDA_RETURN_IF_ERROR(enqueue(bank, frames));
  }
  VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_stop_, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  float ms = 0;
  if (timing_ && cudaEventElapsedTime(&ms, ev_start_, ev_stop_) == cudaSuccess) gpu_time_.record_us(uint64_t(ms * 1000.0f));
  return cudaSuccess;
}

void FirBankCudaStage::remember(const Block& in) noexcept {
  const uint32_t n = std::min(in.frames, history_frames_);
  const uint32_t skip = in.frames - n;  // only the newest history_frames_ matter
  for (uint32_t c = 0; c < channels_; ++c) {
    float* ring = history_.data() + size_t(c) * history_frames_;
    const float* src = in.data + c * in.stride + skip;
    const uint32_t first = std::min(n, history_frames_ - history_pos_);
    std::memcpy(ring + history_pos_, src, first * sizeof(float));
    std::memcpy(ring, src + first, (n - first) * sizeof(float));
  }
  history_pos_ = (history_pos_ + n) % history_frames_;
}

void FirBankCudaStage::unwrap_history() noexcept {
  for (uint32_t c = 0; c < channels_; ++c) {
    const float* ring = history_.data() + size_t(c) * history_frames_;
    float* dst = prime_.data() + size_t(c) * history_frames_;
    const uint32_t tail = history_frames_ - history_pos_;  // oldest part: from pos to the end
    std::memcpy(dst, ring + history_pos_, tail * sizeof(float));
    std::memcpy(dst + tail, ring, history_pos_ * sizeof(float));
  }
}

cudaError_t FirBankCudaStage::prime_gpu(cuda::FirBankCuda& bank) noexcept {
  unwrap_history();
  timing_ = false;  // not a chunk's work
  cudaError_t e = cudaSuccess;
  for (uint32_t at = 0; at < history_frames_ && e == cudaSuccess;) {
    const uint32_t n = std::min(max_frames_, history_frames_ - at);
    e = run_gpu(bank, prime_.data() + at, history_frames_, n);
    at += n;
  }
  timing_ = true;
  return e;
}

void FirBankCudaStage::prime_cpu() noexcept {
  unwrap_history();
  cpu_->reset();
  for (uint32_t at = 0; at < history_frames_;) {
    const uint32_t n = std::min(max_frames_, history_frames_ - at);
    cpu_->process(prime_.data() + at, history_frames_, n, scratch_.data(), max_frames_);
    at += n;
  }
}

void FirBankCudaStage::fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept {
  cudaGetLastError();  // clear a non-sticky error so later CUDA calls (other stages) start clean
  cuda_errors_.fetch_add(1, std::memory_order_relaxed);
  last_error_.store(int(error), std::memory_order_relaxed);
  on_cpu_.store(true, std::memory_order_relaxed);
  prime_cpu();  // the state the GPU bank had before this chunk, rebuilt from the input history
  cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
  emit_event(exec, cuda_fallback_event(index_, exec, error));
  if (exec.log)
    exec.log->printf(3, "fir_bank stage %u: CUDA error %s (%s) at frame %llu: continuing on the CPU twin", unsigned(index_),
                     cudaGetErrorName(error), cudaGetErrorString(error), (unsigned long long)exec.chunk.first_frame);
}

StageStatus FirBankCudaStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  out.frames = in.frames;
  ++chunks_;
  if (on_cpu_.load(std::memory_order_relaxed)) {
    cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
    return StageStatus::kOk;
  }
  cudaError_t e = deferred_error_;
  deferred_error_ = cudaSuccess;
  if (e == cudaSuccess && options_.fail_at_chunk && chunks_ == options_.fail_at_chunk)
    e = cuda::launch_failing_kernel_for_test(stream_);
  if (e == cudaSuccess) e = run_gpu(*bank_, in.data, in.stride, in.frames);
  if (e == cudaSuccess && next_bank_) {  // a reload: crossfade from the old taps to the new over this chunk
    const float* h = h_out_.host<float>();
    std::copy(h, h + size_t(bands_) * channels_ * max_frames_, fade_.begin());
    e = run_gpu(*next_bank_, in.data, in.stride, in.frames);
    if (e == cudaSuccess) {
      h = h_out_.host<float>();
      for (size_t lane = 0; lane < size_t(bands_) * channels_; ++lane)
        for (uint32_t i = 0; i < in.frames; ++i) {
          const float w = float(i + 1) / float(in.frames);
          const size_t k = lane * max_frames_ + i;
          fade_[k] = (1.0f - w) * fade_[k] + w * h[k];
        }
      spare_ = std::move(bank_);  // the old filter is the next reload's spare
      bank_ = std::move(next_bank_);
      for (size_t lane = 0; lane < size_t(bands_) * channels_; ++lane)
        std::memcpy(out.data + lane * out.stride, fade_.data() + lane * max_frames_, in.frames * sizeof(float));
      remember(in);
      return StageStatus::kOk;
    }
  }
  if (e != cudaSuccess) {
    if (next_bank_) spare_ = std::move(next_bank_);  // the CPU twin already has the new taps (apply_update)
    fall_back(in, out, exec, e);
    return StageStatus::kOk;
  }
  const float* h = h_out_.host<float>();
  for (size_t lane = 0; lane < size_t(bands_) * channels_; ++lane)
    std::memcpy(out.data + lane * out.stride, h + lane * max_frames_, in.frames * sizeof(float));
  remember(in);
  return StageStatus::kOk;
}

void FirBankCudaStage::reset() noexcept {
  if (bank_ && !on_cpu_.load(std::memory_order_relaxed)) {
    try {
      bank_->reset();
    } catch (...) {
    }
  }
  if (cpu_) cpu_->reset();
  std::fill(history_.begin(), history_.end(), 0.0f);
  history_pos_ = 0;
}

StageUpdatePlan FirBankCudaStage::plan_update(const StageSettings& next) const {
  return FirBankStage::plan_fir_update(settings_, next, rate_hz_);
}

void FirBankCudaStage::apply_update(StageUpdate& update) noexcept {
  auto& u = static_cast<FirBankUpdate&>(update);
  try {
    cpu_->set_taps(u.taps);  // the twin follows (crossfading itself if it is the one running)
  } catch (...) {
  }
  settings_ = u.settings;
  if (on_cpu_.load(std::memory_order_relaxed) || !spare_) return;
  // The spare gets the new taps and the state the new filter would have had (same history);
  // the next chunk crossfades to it. A failure is handled by the next process() like any other:
  // the CPU twin, with the new taps, takes over.
  cudaError_t e = spare_->set_taps(u.taps);
  if (e == cudaSuccess) {
    try {
      spare_->reset();
    } catch (const cuda::CudaError& err) {
      e = err.code();
    }
  }
  if (e == cudaSuccess) e = prime_gpu(*spare_);
  if (e == cudaSuccess)
    next_bank_ = std::move(spare_);
  else
    deferred_error_ = e;  // the next process() moves to the CPU twin, which has the new taps
}

void FirBankCudaStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  describe_cuda_fallback(ev, body);
}

void FirBankCudaStage::add_status(nlohmann::json& status) const {
  status["backend"] = on_cpu() ? "cpu (fallback)" : "cuda";
  status["memory"] = options_.mapped ? "mapped" : "copy";
  status["graph_chunks"] = graph_chunks();
  status["cuda_errors"] = cuda_errors_.load(std::memory_order_relaxed);
  status["gpu_us"] = {{"p50", gpu_time_.quantile_us(0.5)}, {"p99", gpu_time_.quantile_us(0.99)}, {"max", gpu_time_.max_us()}};
}

}  // namespace vigil
