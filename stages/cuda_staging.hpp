// CudaStaging: how a CUDA stage moves one chunk through the GPU and back. Its lanes are staged in
// page-locked memory; in copy mode they go to device buffers with one 2-D copy each way, in mapped
// mode (`pipeline.memory`) the kernels read and write the page-locked memory in place. One stream,
// GPU time per chunk by CUDA events (after the stage's warm-up), and the status fields every CUDA
// stage reports. Only built with CUDA.
//
// Fewer host copies in a graph: the staged output is page-locked, so the graph uses it as the
// stage's output stream (Stage::output_buffer(): no copy out), and the staged input as the graph's
// input stream when this stage reads that (Stage::input_buffer(): the conversion writes there, no
// copy in). A stage whose input stream is another CUDA stage's staged output reads it in place
// (bind_input(): no copy into its own staged input; the 2-D copy, or in mapped mode the kernels,
// take it from there). With pipeline.gpu_resident, a stage may read another's output on the device
// (enqueue()'s device_in: device_out() of that stage, no copy in), and a stage whose output only
// such readers take skips its copy back (set_copy_out(false); fetch_out() when one needs it after all).
//
// The look-ahead (prepare with two input slots): the graph converts the next chunk into the other
// staged input while this one's kernels run, and upload() starts its copy to the device on a copy
// stream of its own, so that it overlaps them; the next chunk's work waits for that copy instead of
// making its own (take_upload()).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json_fwd.hpp>

#include "core/clock.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pinned_buffer.hpp"
#include "core/latency_histogram.hpp"

namespace vigil {

class CudaStaging {
 public:
  CudaStaging() = default;
  ~CudaStaging();
  CudaStaging(const CudaStaging&) = delete;
  CudaStaging& operator=(const CudaStaging&) = delete;

  // Before prepare(): chunks arriving at `page_locked` (in_lanes lanes of stride max_frames,
  // page-locked, mapped in mapped mode: another staging's host_out()) are read from there.
  void bind_input(const float* page_locked) noexcept { bound_in_ = page_locked; }
  // The stream, events and buffers for in_lanes lanes in and out_lanes lanes out of up to
  // max_frames frames; input_slots 2: a second staged input and the copy stream (the look-ahead).
  // Throws CudaError.
  void prepare(uint32_t in_lanes, uint32_t out_lanes, uint32_t max_frames, bool mapped, unsigned input_slots = 1);
  // Whether a chunk at `in` is read in place from the bound input.
  bool reads_bound(const float* in) const noexcept { return bound_in_ && in == bound_in_; }
  bool has_bound_input() const noexcept { return bound_in_ != nullptr; }

  cudaStream_t stream() const noexcept { return stream_; }
  bool mapped() const noexcept { return mapped_; }
  uint32_t stride() const noexcept { return max_frames_; }  // of every staged lane
  unsigned input_slots() const noexcept { return slots_; }
  float* host_in(unsigned slot = 0) const noexcept { return h_in_[slot].host<float>(); }
  float* host_out() const noexcept { return h_out_.host<float>(); }
  // Which staged input `in` is (0 or 1), or -1 for none.
  int slot_of(const float* in) const noexcept {
    for (unsigned s = 0; s < slots_; ++s)
      if (in == host_in(s)) return int(s);
    return -1;
  }

  // Lane l of `in` (in + l * stride) into the staged input; nothing to do when `in` is one. RT-safe.
  void stage(const float* in, size_t stride, uint32_t frames) noexcept {
    if (slot_of(in) >= 0 || reads_bound(in)) return;
    for (uint32_t l = 0; l < in_lanes_; ++l)
      std::memcpy(host_in() + size_t(l) * max_frames_, in + l * stride, frames * sizeof(float));
  }

  // The device part of a chunk, on the stream: the copy in (copy mode), work(d_in, d_out, stride)
  // enqueuing the kernels, the copy out (unless the output stays on the device). Nothing waits: it
  // can be captured as a CUDA graph. from_bound: the chunk is in the bound input (reads_bound),
  // else in host_in(slot). device_in: the chunk is already on the device there (another stage's
  // device_out(), stride max_frames): no copy in. copy_in false: the slot's upload (take_upload)
  // brought it.
  template <class Work>
  cudaError_t enqueue(uint32_t frames, Work&& work, bool from_bound = false, const float* device_in = nullptr,
                      unsigned slot = 0, bool copy_in = true) noexcept {
    const size_t s = max_frames_ * sizeof(float);
    const float* src = from_bound ? bound_in_ : host_in(slot);
    const float* d_in = device_in ? device_in
                        : mapped_ ? (from_bound ? bound_in_device_ : h_in_[slot].device<float>())
                                  : d_in_[from_bound ? 0 : slot];
    float* d_out = mapped_ ? h_out_.device<float>() : d_out_;
    if (!mapped_ && !device_in && copy_in)
      VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(const_cast<float*>(d_in), s, src, s, frames * sizeof(float), in_lanes_,
                                                   cudaMemcpyHostToDevice, stream_));
    VIGIL_CUDA_RETURN_IF_ERROR(work(d_in, d_out, size_t(max_frames_)));
    if (!mapped_ && copy_out_ && out_lanes_ > 0)
      VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(h_out_.host(), s, d_out_, s, frames * sizeof(float), out_lanes_,
                                                   cudaMemcpyDeviceToHost, stream_));
    return cudaSuccess;
  }

  // The look-ahead (two input slots, copy mode; in mapped mode the kernels read the slot in place
  // and neither does anything). upload(): host_in(slot)'s first `frames` frames to the device on
  // the copy stream. take_upload(), before the chunk in that slot is enqueued: when its upload
  // was started for the same frames, the stream waits for it and copy_in becomes false (enqueue
  // then makes no copy of its own); either way the slot's upload is used up. RT-safe.
  cudaError_t upload(unsigned slot, uint32_t frames) noexcept {
    if (mapped_ || slot >= slots_ || !copy_stream_) return cudaSuccess;
    const size_t s = max_frames_ * sizeof(float);
    uploaded_frames_[slot] = 0;
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(d_in_[slot], s, host_in(slot), s, frames * sizeof(float), in_lanes_,
                                                 cudaMemcpyHostToDevice, copy_stream_));
    return mark_uploaded(slot, frames);
  }
  // A stage's own upload: it enqueued what fills device_in(slot) on copy_stream(), then marks it
  // (copy mode, two slots).
  cudaStream_t copy_stream() const noexcept { return copy_stream_; }
  float* device_in(unsigned slot) const noexcept { return mapped_ ? nullptr : d_in_[slot]; }
  cudaError_t mark_uploaded(unsigned slot, uint32_t frames) noexcept {
    VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_uploaded_[slot], copy_stream_));
    uploaded_frames_[slot] = frames;
    return cudaSuccess;
  }
  cudaError_t take_upload(unsigned slot, uint32_t frames, bool& copy_in) noexcept {
    copy_in = true;
    if (slot >= slots_ || uploaded_frames_[slot] == 0) return cudaSuccess;
    const bool same = uploaded_frames_[slot] == frames;
    uploaded_frames_[slot] = 0;
    if (!same) return cudaSuccess;
    // The time the stream then waits for the upload, from here to run()'s start (upload_wait_us).
    VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(ev_wait_, stream_));
    VIGIL_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, ev_uploaded_[slot], 0));
    copy_in = false;
    waited_ = true;
    return cudaSuccess;
  }
  // Forgets a slot's upload (its chunk runs on the CPU twin). RT-safe.
  void drop_upload(unsigned slot) noexcept {
    if (slot < slots_) uploaded_frames_[slot] = 0;
  }

  // Device residency (copy mode). device_out(): the output's device copy, which another CUDA stage
  // may read in place (null in mapped mode: there the kernels already wrote host_out()).
  // set_copy_out(false): enqueue() leaves the output on the device; fetch_out() brings the last
  // chunk's back when someone on the host needs it after all. Both RT-safe.
  const float* device_out() const noexcept { return mapped_ ? nullptr : d_out_; }
  void set_copy_out(bool on) noexcept { copy_out_ = on; }
  bool copy_out() const noexcept { return copy_out_ || mapped_; }
  cudaError_t fetch_out(uint32_t frames) noexcept {
    if (mapped_ || out_lanes_ == 0) return cudaSuccess;
    const size_t s = max_frames_ * sizeof(float);
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(h_out_.host(), s, d_out_, s, frames * sizeof(float), out_lanes_,
                                                 cudaMemcpyDeviceToHost, stream_));
    return cudaStreamSynchronize(stream_);
  }

  // Where the last chunk's output is, for a stage's Stage::keep_output_on_device(),
  // device_output() and make_output_host_valid(). keep_output(): no copy back unless asked
  // (restore_copy_out() after a chunk that forced one). begin_chunk() at the start of each
  // process(): the output is on the host only, until output_on_device() says the GPU path wrote
  // it; that returns whether it was copied back too. RT-safe.
  void keep_output(bool keep) noexcept {
    keep_ = keep;
    copy_out_ = !keep;
  }
  bool keeps_output() const noexcept { return keep_; }
  void restore_copy_out() noexcept { copy_out_ = !keep_; }
  void begin_chunk(uint32_t frames) noexcept {
    last_frames_ = frames;
    device_valid_ = false;
    host_valid_ = true;
  }
  bool output_on_device() noexcept {
    device_valid_ = true;
    host_valid_ = !keep_;
    return host_valid_;
  }
  const float* chunk_device_out() const noexcept { return device_valid_ ? device_out() : nullptr; }
  bool make_output_host_valid(uint32_t frames) noexcept {
    if (host_valid_) return true;
    if (fetch_out(frames < last_frames_ ? frames : last_frames_) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    host_valid_ = true;
    return true;
  }

  // Two-phase work (enqueue, then complete), in the spirit of CUB's enqueue-only calls:
  // launch() queues launch() between two events on the stream and returns at once; busy() polls
  // the stream, noting when the GPU was first seen to begin the work; finish() waits for it and
  // puts the times into the status when `record` (not for warm-up or priming). Between the two the
  // pipeline thread has the wait to itself (the look-ahead), with no stage on its stack.
  // run() is the two in one. events_in_launch: launch() replays a graph that records a pair of
  // events of its own (record_captured_event() when it was captured): two CUDA calls fewer, each
  // 2-40 us of the pipeline thread's time on the GPU hosts measured; the GPU time is then the
  // graph's. (Without it such a graph's own events are recorded too, and unused.) RT-safe.
  template <class Launch>
  cudaError_t launch(Launch&& launch, bool record, bool events_in_launch = false) noexcept {
    t_launch_ = mono_now_ns();
    t_started_ = 0;
    record_ = record;
    pending_start_ = events_in_launch ? ev_graph_start_ : ev_start_;
    pending_stop_ = events_in_launch ? ev_graph_stop_ : ev_stop_;
    if (!events_in_launch) VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(pending_start_, stream_));
    VIGIL_CUDA_RETURN_IF_ERROR(launch());
    if (!events_in_launch) VIGIL_CUDA_RETURN_IF_ERROR(cudaEventRecord(pending_stop_, stream_));
    t_wait_ = mono_now_ns();
    return cudaSuccess;
  }
  // Whether the launched work still runs (false once it is done or has failed: finish() says).
  bool busy() noexcept {
    if (cudaStreamQuery(stream_) != cudaErrorNotReady) return false;
    if (!t_started_ && cudaEventQuery(pending_start_) == cudaSuccess) t_started_ = mono_now_ns();
    return true;
  }
  cudaError_t finish() noexcept {
    VIGIL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    if (record_) {
      enqueue_time_.record_ns(t_wait_ - t_launch_);
      wait_time_.record_ns(mono_now_ns() - t_wait_);
      if (t_started_) start_lag_.record_ns(t_started_ - t_wait_);
    }
    float ms = 0;
    if (record_ && cudaEventElapsedTime(&ms, pending_start_, pending_stop_) == cudaSuccess)
      gpu_time_.record_us(uint64_t(ms * 1000.0f));
    if (waited_ && record_ && cudaEventElapsedTime(&ms, ev_wait_, pending_start_) == cudaSuccess)
      upload_wait_.record_us(uint64_t(ms * 1000.0f));
    waited_ = false;
    return cudaSuccess;
  }
  template <class Launch>
  cudaError_t run(Launch&& work, bool record, bool events_in_launch = false) noexcept {
    VIGIL_CUDA_RETURN_IF_ERROR(launch(work, record, events_in_launch));
    return finish();
  }

  // While the stream is being captured: the start (stop false) or stop of the graph's own pair of
  // events, as a node of the graph (replayed with run()'s events_in_launch). RT-safe.
  cudaError_t record_captured_event(bool stop) noexcept {
    return cudaEventRecordWithFlags(stop ? ev_graph_stop_ : ev_graph_start_, stream_, cudaEventRecordExternal);
  }

  // The staged output's lanes to out (lane l at out + l * stride); nothing to do when `out` is it.
  // RT-safe.
  void unstage(float* out, size_t stride, uint32_t frames) const noexcept {
    if (out == host_out()) return;
    for (uint32_t l = 0; l < out_lanes_; ++l)
      std::memcpy(out + l * stride, host_out() + size_t(l) * max_frames_, frames * sizeof(float));
  }

  // backend (`cuda`, or `cpu (fallback)`), memory, cuda_errors, gpu_us {p50, p99, max}.
  void add_status(nlohmann::json& status, bool on_cpu, uint64_t cuda_errors) const;

 private:
  uint32_t in_lanes_ = 0, out_lanes_ = 0, max_frames_ = 0;
  bool mapped_ = false;
  unsigned slots_ = 1;  // staged inputs (2: the look-ahead)
  bool copy_out_ = true;
  bool keep_ = false;                          // keep_output()
  bool device_valid_ = false, host_valid_ = true;  // where the last chunk's output is
  uint32_t last_frames_ = 0;
  const float* bound_in_ = nullptr;         // bind_input()
  const float* bound_in_device_ = nullptr;  // its device alias (mapped mode)
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev_start_ = nullptr, ev_stop_ = nullptr;
  cudaEvent_t ev_graph_start_ = nullptr, ev_graph_stop_ = nullptr;  // recorded by captured graphs
  cudaStream_t copy_stream_ = nullptr;        // the look-ahead's uploads (copy mode, two slots)
  cudaEvent_t ev_uploaded_[2] = {nullptr, nullptr};
  cudaEvent_t ev_wait_ = nullptr;   // before a wait for an upload (take_upload)
  bool waited_ = false;             // this chunk's stream waited for one
  LatencyHistogram upload_wait_;    // how long, on the GPU: what of the copy was left when the chunk came
  uint32_t uploaded_frames_[2] = {0, 0};       // a slot's upload under way (0: none)
  cuda::PinnedBuffer h_in_[2], h_out_;
  float* d_in_[2] = {nullptr, nullptr};  // copy mode
  float* d_out_ = nullptr;
  LatencyHistogram gpu_time_;
  LatencyHistogram enqueue_time_, wait_time_;  // the host's: queueing the work; then waiting for it (the look-ahead's work included)
  LatencyHistogram start_lag_;  // polled waits: from the work queued until the GPU was seen to begin it
  // The work launch() queued, for busy() and finish().
  int64_t t_launch_ = 0, t_wait_ = 0, t_started_ = 0;
  bool record_ = false;
  cudaEvent_t pending_start_ = nullptr, pending_stop_ = nullptr;
};

}  // namespace vigil
