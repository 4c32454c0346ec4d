// RT: process() on the pipeline thread; the rest on the main thread.
#include "pipeline/denoise_cuda_stage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "acquisition/rt_log.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"
#include "pipeline/cuda_stage_events.hpp"

namespace vigil {

DenoiseCudaStage::DenoiseCudaStage(DenoiseStageSettings settings, uint16_t index, CudaStageOptions options)
    : settings_(std::move(settings)), index_(index), options_(options) {}

DenoiseCudaStage::~DenoiseCudaStage() {
  if (stream_) cudaStreamSynchronize(stream_);
  gpu_.reset();
  if (d_in_) cudaFree(d_in_);
  if (d_out_) cudaFree(d_out_);
  if (ev_start_) cudaEventDestroy(ev_start_);
  if (ev_stop_) cudaEventDestroy(ev_stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

StreamFormat DenoiseCudaStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  const uint64_t lanes = uint64_t(in.bands) * in.channels;
  if (lanes < 1 || lanes > 4096)
    throw std::invalid_argument("wavelet_denoise: the input must have 1..4096 lanes (bands x channels), got " +
                                std::to_string(lanes));
  lanes_ = uint32_t(lanes);
  max_frames_ = max_frames;
  hop_ = settings_.window / 2;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_start_));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_stop_));
  gpu_ = std::make_unique<cuda::StreamingDenoiserCuda>(settings_.spec(), settings_.window, lanes_, max_frames_, stream_);
  cpu_ = std::make_unique<StreamingDenoiser>(settings_.spec(), settings_.window, lanes_);
  const size_t floats = size_t(lanes_) * max_frames_;
  h_in_ = cuda::PinnedBuffer(floats * sizeof(float), options_.mapped);
  h_out_ = cuda::PinnedBuffer(floats * sizeof(float), options_.mapped);
  if (!options_.mapped) {
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in_), floats * sizeof(float)));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out_), floats * sizeof(float)));
  }
  // Every window the GPU still owes output from lies in the last 2 windows + a hop of input.
  prime_base_ = (2 * settings_.window + hop_ + hop_ - 1) / hop_ * hop_;
  ring_frames_ = prime_base_ + hop_;
  ring_.assign(size_t(lanes_) * ring_frames_, 0.0f);
  prime_in_.assign(size_t(lanes_) * ring_frames_, 0.0f);
  prime_out_.assign(size_t(lanes_) * ring_frames_, 0.0f);
  // Warm-up (module loading), then a clean state.
  std::fill_n(h_in_.host<float>(), floats, 0.0f);
  Block zeros{h_in_.host<float>(), max_frames_, max_frames_, in.channels, in.bands};
  VIGIL_CUDA_CHECK(run_gpu(zeros));
  gpu_->reset();
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream_));
  timing_ = true;
  StreamFormat out = in;
  out.delay_frames = in.delay_frames + gpu_->latency_frames();
  return out;
}

cudaError_t DenoiseCudaStage::run_gpu(const Block& in) noexcept {
  const size_t s = max_frames_;
  float* h_in = h_in_.host<float>();
  if (in.data != h_in)
    for (uint32_t l = 0; l < lanes_; ++l) std::memcpy(h_in + l * s, in.data + l * in.stride, in.frames * sizeof(float));
  VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_start_, stream_));
  const float* d_in = options_.mapped ? h_in_.device<float>() : d_in_;
  float* d_out = options_.mapped ? h_out_.device<float>() : d_out_;
  if (!options_.mapped)
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(d_in_, s * sizeof(float), h_in, s * sizeof(float),
                                                 in.frames * sizeof(float), lanes_, cudaMemcpyHostToDevice, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(gpu_->process(d_in, s, in.frames, d_out, s));
  if (!options_.mapped)
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(h_out_.host(), s * sizeof(float), d_out_, s * sizeof(float),
                                                 in.frames * sizeof(float), lanes_, cudaMemcpyDeviceToHost, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_stop_, stream_));
  VIGIL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  float ms = 0;
  if (timing_ && cudaEventElapsedTime(&ms, ev_start_, ev_stop_) == cudaSuccess) gpu_time_.record_us(uint64_t(ms * 1000.0f));
  return cudaSuccess;
}

void DenoiseCudaStage::remember(const Block& in) noexcept {
  const uint32_t n = std::min(in.frames, ring_frames_);
  const uint32_t skip = in.frames - n;
  for (uint32_t l = 0; l < lanes_; ++l) {
    float* ring = ring_.data() + size_t(l) * ring_frames_;
    const float* src = in.data + l * in.stride + skip;
    const uint32_t first = std::min(n, ring_frames_ - ring_pos_);
    std::memcpy(ring + ring_pos_, src, first * sizeof(float));
    std::memcpy(ring, src + first, (n - first) * sizeof(float));
  }
  ring_pos_ = (ring_pos_ + n) % ring_frames_;
  total_frames_ += in.frames;
}

void DenoiseCudaStage::fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept {
  cudaGetLastError();  // clear a non-sticky error so later CUDA calls (other stages) start clean
  cuda_errors_.fetch_add(1, std::memory_order_relaxed);
  on_cpu_.store(true, std::memory_order_relaxed);
  // Replay the last (base + total mod hop) frames into a fresh twin: the same phase as the GPU's,
  // every pending window rebuilt (frames before the stream's start are zeros, as they were).
  const uint32_t k = prime_base_ + uint32_t(total_frames_ % hop_);
  for (uint32_t l = 0; l < lanes_; ++l) {
    const float* ring = ring_.data() + size_t(l) * ring_frames_;
    float* dst = prime_in_.data() + size_t(l) * ring_frames_;
    for (uint32_t i = 0; i < k; ++i) dst[i] = ring[(ring_pos_ + ring_frames_ - k + i) % ring_frames_];
  }
  cpu_->reset();
  cpu_->process(prime_in_.data(), ring_frames_, k, prime_out_.data(), ring_frames_);
  cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
  emit_event(exec, cuda_fallback_event(index_, exec, error));
  if (exec.log)
    exec.log->printf(3, "wavelet_denoise stage %u: CUDA error %s (%s) at frame %llu: continuing on the CPU twin",
                     unsigned(index_), cudaGetErrorName(error), cudaGetErrorString(error),
                     (unsigned long long)exec.chunk.first_frame);
}

StageStatus DenoiseCudaStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  out.frames = in.frames;
  ++chunks_;
  if (on_cpu_.load(std::memory_order_relaxed)) {
    cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
    return StageStatus::kOk;
  }
  cudaError_t e = cudaSuccess;
  if (options_.fail_at_chunk && chunks_ == options_.fail_at_chunk) e = cuda::launch_failing_kernel_for_test(stream_);
  if (e == cudaSuccess) e = run_gpu(in);
  if (e != cudaSuccess) {
    fall_back(in, out, exec, e);
    return StageStatus::kOk;
  }
  const float* h = h_out_.host<float>();
  for (uint32_t l = 0; l < lanes_; ++l) std::memcpy(out.data + l * out.stride, h + size_t(l) * max_frames_, in.frames * sizeof(float));
  remember(in);
  return StageStatus::kOk;
}

void DenoiseCudaStage::reset() noexcept {
  if (gpu_ && !on_cpu_.load(std::memory_order_relaxed)) {
    try {
      gpu_->reset();
    } catch (...) {
    }
  }
  if (cpu_) cpu_->reset();
  std::fill(ring_.begin(), ring_.end(), 0.0f);
  ring_pos_ = 0;
  total_frames_ = 0;
}

void DenoiseCudaStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  describe_cuda_fallback(ev, body);
}

void DenoiseCudaStage::add_status(nlohmann::json& status) const {
  status["backend"] = on_cpu() ? "cpu (fallback)" : "cuda";
  status["memory"] = options_.mapped ? "mapped" : "copy";
  status["cuda_errors"] = cuda_errors_.load(std::memory_order_relaxed);
  status["gpu_us"] = {{"p50", gpu_time_.quantile_us(0.5)}, {"p99", gpu_time_.quantile_us(0.99)}, {"max", gpu_time_.max_us()}};
}

}  // namespace vigil
