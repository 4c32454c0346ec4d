// RT: process() on the pipeline thread; the rest on the main thread.
#include "stages/denoise_cuda_stage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/rt_log.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/fault_injection.hpp"
#include "stages/cuda_stage_events.hpp"

namespace vigil {

DenoiseCudaStage::DenoiseCudaStage(DenoiseStageSettings settings, uint16_t index, CudaStageOptions options)
    : settings_(std::move(settings)), index_(index), options_(options),
      twin_("wavelet_denoise", index, options.fail_at_chunk) {}

DenoiseCudaStage::~DenoiseCudaStage() = default;  // the denoiser goes before the staging's stream

StreamFormat DenoiseCudaStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  const uint64_t lanes = uint64_t(in.bands) * in.channels;
  if (lanes < 1 || lanes > 4096)
    throw std::invalid_argument("wavelet_denoise: the input must have 1..4096 lanes (bands x channels), got " +
                                std::to_string(lanes));
  lanes_ = uint32_t(lanes);
  max_frames_ = max_frames;
  hop_ = settings_.window / 2;
  staging_.prepare(lanes_, lanes_, max_frames_, options_.mapped);
  gpu_ = std::make_unique<cuda::StreamingDenoiserCuda>(settings_.spec(), settings_.window, lanes_, max_frames_,
                                                       staging_.stream());
  cpu_ = std::make_unique<StreamingDenoiser>(settings_.spec(), settings_.window, lanes_);
  // Every window the GPU still owes output from lies in the last 2 windows + a hop of input.
  prime_base_ = (2 * settings_.window + hop_ + hop_ - 1) / hop_ * hop_;
  prime_frames_ = prime_base_ + hop_;
  history_.assign(lanes_, prime_frames_, max_frames_, !options_.mapped);
  prime_in_.assign(size_t(lanes_) * prime_frames_, 0.0f);
  prime_out_.assign(size_t(lanes_) * prime_frames_, 0.0f);
  // Warm-up (module loading), then a clean state.
  std::fill_n(staging_.host_in(), size_t(lanes_) * max_frames_, 0.0f);
  Block zeros{staging_.host_in(), max_frames_, max_frames_, in.channels, in.bands};
  VIGIL_CUDA_CHECK(run_gpu(zeros));
  gpu_->reset();
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(staging_.stream()));
  timing_ = true;
  StreamFormat out = in;
  out.delay_frames = in.delay_frames + gpu_->latency_frames();
  return out;
}

cudaError_t DenoiseCudaStage::launch_gpu(const Block& in) noexcept {
  // The producer's bands still on the device (a CUDA stage that ran there this chunk): read them
  // there, no copy in.
  const float* device_in = twin_.producer() && in.stride == max_frames_ ? twin_.producer()->device_output() : nullptr;
  if (!device_in) staging_.stage(in.data, in.stride, in.frames);
  const bool from_bound = staging_.reads_bound(in.data);
  return staging_.launch(
      [&]() -> cudaError_t {
        VIGIL_CUDA_RETURN_IF_ERROR(staging_.enqueue(
            in.frames,
            [&](const float* d_in, float* d_out, size_t stride) { return gpu_->process(d_in, stride, in.frames, d_out, stride); },
            from_bound, device_in));
        if (!history_.from_device() || !timing_) return cudaSuccess;  // (the warm-up is no chunk)
        // The chunk's newest frames, from where the kernels read it, into the history.
        return history_.enqueue(device_in ? device_in : staging_.device_in(0), in.frames, staging_.stream());
      },
      timing_);
}

cudaError_t DenoiseCudaStage::run_gpu(const Block& in) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(launch_gpu(in));
  return staging_.finish();
}

StageStatus DenoiseCudaStage::fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept {
  history_.discard();
  // Replay the last (base + total mod hop) frames into a fresh twin: the same phase as the GPU's,
  // every pending window rebuilt (frames before the stream's start are zeros, as they were).
  const uint32_t k = prime_base_ + uint32_t(total_frames_ % hop_);
  const uint32_t stride = prime_frames_;
  history_.newest(k, prime_in_.data(), stride);  // waits for the history's copies: complete() then says
  cpu_->reset();
  cpu_->process(prime_in_.data(), stride, k, prime_out_.data(), stride);
  twin_.hand_over(exec, error,
                  history_.complete() ? "" : " (primed from an input history the failure may have cut short)");
  if (!twin_.input_on_host(in.frames)) return StageStatus::kFailed;
  cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
  return StageStatus::kOk;
}

StageStatus DenoiseCudaStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  return finish_now(in, out, exec);
}

bool DenoiseCudaStage::begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept {
  out.frames = in.frames;
  staging_.begin_chunk(in.frames);
  if (twin_.on_cpu()) {
    cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
    done = StageStatus::kOk;
    return false;
  }
  return twin_.queue(
      staging_.stream(), [&] { return launch_gpu(in); }, [&](cudaError_t e) { return fall_back(in, out, exec, e); },
      done);
}

StageStatus DenoiseCudaStage::finish(const Block& in, Block& out, const Exec& exec) noexcept {
  const cudaError_t e = staging_.finish();
  if (e != cudaSuccess) return fall_back(in, out, exec, e);
  if (staging_.output_on_device()) staging_.unstage(out.data, out.stride, in.frames);
  history_.commit(in);
  total_frames_ += in.frames;
  return StageStatus::kOk;
}

void DenoiseCudaStage::reset() noexcept {
  // A failed reset: the next process() moves to the CPU twin (reset below). An error already
  // deferred stays.
  if (gpu_ && !twin_.on_cpu()) twin_.defer(cuda::error_of([&] { gpu_->reset(); }));
  if (cpu_) cpu_->reset();
  history_.clear();
  total_frames_ = 0;
}

void DenoiseCudaStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  describe_cuda_fallback(ev, body);
}

void DenoiseCudaStage::add_status(nlohmann::json& status) const {
  staging_.add_status(status, on_cpu(), twin_.errors());
}

}  // namespace vigil
