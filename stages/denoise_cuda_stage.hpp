// DenoiseCudaStage: the wavelet_denoise stage on the CUDA backend. Each chunk's lanes go to the GPU
// through page-locked staging (copied, or read in place when mapped: `pipeline.memory`),
// cuda/StreamingDenoiserCuda denoises every window that completes in the chunk in one launch, and
// the output comes back the same way; one stream, synchronised once per chunk, GPU time measured
// with CUDA events. Output equals the CPU twin's (DenoiseStage: dsp/StreamingDenoiser), delayed by
// the same window.
//
// A CUDA error is counted, reported once (a `backend` event, state fallback) and the stage goes on
// with the CPU twin, primed from the input it keeps (enough whole hops to rebuild every window the
// GPU had pending, in the same phase), so the failing chunk and all later ones come out as if the
// CPU had run from the start: no chunk lost. Windows up to 4096 samples (Graph picks the CPU stage
// for longer ones). In copy mode that input comes back from the device: each chunk's newest frames
// are copied into a page-locked ring after its kernels (one chunk larger than what priming reads),
// so the host copies nothing, and a CUDA producer's bands (pipeline.gpu_resident) need not come
// back at all. Only built with CUDA (VIGIL_HAVE_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "config/settings.hpp"
#include "cuda/streaming_denoiser_cuda.hpp"
#include "dsp/wavelet_denoiser.hpp"
#include "stages/cuda_staging.hpp"
#include "stages/cuda_twin.hpp"
#include "stages/fir_bank_cuda_stage.hpp"  // CudaStageOptions
#include "stages/staged_input_history.hpp"
#include "stages/stage.hpp"

namespace vigil {

class DenoiseCudaStage final : public Stage, public GpuStage {
 public:
  // Whether these settings can run on the GPU (the window fits a block's shared memory).
  static bool fits(const DenoiseStageSettings& s) noexcept { return s.window <= cuda::kStreamingDenoiseMaxWindow; }

  DenoiseCudaStage(DenoiseStageSettings settings, uint16_t index, CudaStageOptions options);
  ~DenoiseCudaStage() override;

  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  void add_status(nlohmann::json& status) const override;
  // The staging's page-locked buffers, for the graph to spare host copies (Stage).
  void bind_input(const float* page_locked) noexcept override { staging_.bind_input(page_locked); }
  float* output_buffer() const noexcept override { return staging_.host_out(); }
  float* input_buffer() const noexcept override { return staging_.host_in(); }
  // Device residency (Stage): reads a CUDA producer's bands on the device (in copy mode its history
  // of them comes from there too, so it needs them on the host only on its CPU twin), and its own
  // output may stay on the device for a reader that takes it there.
  void bind_producer(GpuStage* producer) noexcept override { twin_.bind_producer(producer); }
  bool needs_host_input() const noexcept override { return on_cpu() || options_.mapped; }
  void keep_output_on_device(bool keep) noexcept override { staging_.keep_output(keep); }
  const float* device_output() const noexcept override { return staging_.chunk_device_out(); }
  bool make_output_host_valid(uint32_t frames) noexcept override { return staging_.make_output_host_valid(frames); }
  // Two-phase work (GpuStage): begin() queues the denoiser, finish() takes its output.
  bool two_phase() const noexcept override { return true; }
  bool begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept override;
  bool busy() noexcept override { return staging_.busy(); }
  StageStatus finish(const Block& in, Block& out, const Exec& exec) noexcept override;

  bool on_cpu() const noexcept { return twin_.on_cpu(); }

 private:
  // in -> the staged output (and the history, copy mode): queued (launch_gpu), or queued and
  // waited for (run_gpu: the warm-up).
  cudaError_t launch_gpu(const Block& in) noexcept;
  cudaError_t run_gpu(const Block& in) noexcept;
  // The hand-over on a CUDA error: the twin primed from the input history, then this chunk.
  StageStatus fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error) noexcept;

  DenoiseStageSettings settings_;
  uint16_t index_;
  CudaStageOptions options_;
  uint32_t lanes_ = 0, max_frames_ = 0, hop_ = 0;
  CudaStaging staging_;  // before the denoiser: its stream outlives it
  std::unique_ptr<cuda::StreamingDenoiserCuda> gpu_;
  std::unique_ptr<StreamingDenoiser> cpu_;  // the fallback twin
  // The newest input: priming the CPU twin replays the last (base + total mod hop) frames of it,
  // base a multiple of the hop >= 2 windows + a hop.
  StagedInputHistory history_;
  uint32_t prime_frames_ = 0;      // the most priming replays: base + a hop
  uint32_t prime_base_ = 0;
  uint64_t total_frames_ = 0;
  std::vector<float> prime_in_, prime_out_;
  CudaTwin twin_;  // the fault injection, deferred errors, producer and hand-over
  bool timing_ = false;  // not during the warm-up
};

}  // namespace vigil
