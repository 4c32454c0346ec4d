#include "stages/cuda_staging.hpp"

#include <nlohmann/json.hpp>

namespace vigil {

CudaStaging::~CudaStaging() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  for (float* d : d_in_)
    if (d) cudaFree(d);
  for (cudaEvent_t e : ev_uploaded_)
    if (e) cudaEventDestroy(e);
  if (ev_wait_) cudaEventDestroy(ev_wait_);
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  if (d_out_) cudaFree(d_out_);
  if (ev_start_) cudaEventDestroy(ev_start_);
  if (ev_stop_) cudaEventDestroy(ev_stop_);
  if (ev_graph_start_) cudaEventDestroy(ev_graph_start_);
  if (ev_graph_stop_) cudaEventDestroy(ev_graph_stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaStaging::prepare(uint32_t in_lanes, uint32_t out_lanes, uint32_t max_frames, bool mapped, unsigned input_slots) {
  slots_ = input_slots == 2 ? 2 : 1;
  in_lanes_ = in_lanes;
  out_lanes_ = out_lanes;
  max_frames_ = max_frames;
  mapped_ = mapped;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_start_));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_stop_));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_graph_start_));
  VIGIL_CUDA_CHECK(cudaEventCreate(&ev_graph_stop_));
  const size_t in_floats = size_t(in_lanes) * max_frames, out_floats = size_t(out_lanes) * max_frames;
  for (unsigned s = 0; s < slots_; ++s) h_in_[s] = cuda::PinnedBuffer(in_floats * sizeof(float), mapped);
  if (out_floats) h_out_ = cuda::PinnedBuffer(out_floats * sizeof(float), mapped);  // none for a detector
  if (mapped && bound_in_) {
    void* alias = nullptr;
    VIGIL_CUDA_CHECK(cudaHostGetDevicePointer(&alias, const_cast<float*>(bound_in_), 0));
    bound_in_device_ = static_cast<const float*>(alias);
  }
  if (!mapped) {
    for (unsigned s = 0; s < slots_; ++s)
      VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_in_[s]), in_floats * sizeof(float)));
    if (slots_ == 2) {
      VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
      for (cudaEvent_t& e : ev_uploaded_) VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      VIGIL_CUDA_CHECK(cudaEventCreate(&ev_wait_));
    }
    if (out_floats) VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out_), out_floats * sizeof(float)));
  }
}

void CudaStaging::add_status(nlohmann::json& status, bool on_cpu, uint64_t cuda_errors) const {
  status["backend"] = on_cpu ? "cpu (fallback)" : "cuda";
  status["memory"] = mapped_ ? "mapped" : "copy";
  status["cuda_errors"] = cuda_errors;
  status["gpu_us"] = {{"p50", gpu_time_.quantile_us(0.5)}, {"p99", gpu_time_.quantile_us(0.99)}, {"max", gpu_time_.max_us()}};
  status["enqueue_us"] = {{"p50", enqueue_time_.quantile_us(0.5)}, {"p99", enqueue_time_.quantile_us(0.99)},
                          {"max", enqueue_time_.max_us()}};
  status["wait_us"] = {{"p50", wait_time_.quantile_us(0.5)}, {"p99", wait_time_.quantile_us(0.99)},
                       {"max", wait_time_.max_us()}};
  status["start_lag_us"] = {{"p50", start_lag_.quantile_us(0.5)}, {"p99", start_lag_.quantile_us(0.99)},
                            {"max", start_lag_.max_us()}};
  if (copy_stream_)
    status["upload_wait_us"] = {{"p50", upload_wait_.quantile_us(0.5)},
                                {"p99", upload_wait_.quantile_us(0.99)},
                                {"max", upload_wait_.max_us()}};
}

}  // namespace vigil
