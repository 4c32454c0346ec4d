// RT: process() and apply_update() on the pipeline thread; the rest on the main thread.
#include "stages/fir_bank_cuda_stage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/rt_log.hpp"
#include "cuda/fir_direct_cuda.hpp"
#include "cuda/fault_injection.hpp"
#include "cuda/sample_convert.cuh"
#include "stages/cuda_stage_events.hpp"
#include "stages/event_record.hpp"
#include "stages/fir_bank_stage.hpp"

namespace vigil {


FirBankCudaStage::FirBankCudaStage(FirBankSettings settings, uint16_t index, CudaStageOptions options)
    : settings_(std::move(settings)), index_(index), options_(options),
      twin_("fir_bank", index, options.fail_at_chunk) {}

FirBankCudaStage::~FirBankCudaStage() {
  if (reload_stream_) cudaStreamSynchronize(reload_stream_);
  if (staging_.stream()) cudaStreamSynchronize(staging_.stream());
  for (const ChunkGraph& g : graphs_) cudaGraphExecDestroy(g.exec);
  if (staging_.copy_stream()) cudaStreamSynchronize(staging_.copy_stream());
  for (void* d : d_raw_)
    if (d) cudaFree(d);
  for (unsigned long long* d : d_counts_)
    if (d) cudaFree(d);
  for (cudaEvent_t ev : {ev_before_reload_, ev_primed_})
    if (ev) cudaEventDestroy(ev);
  if (reload_stream_) cudaStreamDestroy(reload_stream_);
  cudaFree(d_prime_in_);
  cudaFree(d_prime_out_);
  // The filters go before the staging (a later member): its stream outlives them.
}

StreamFormat FirBankCudaStage::prepare(const StreamFormat& in, uint32_t max_frames) {
  if (in.bands != 1)
    throw std::invalid_argument("fir_bank: input must have 1 band per channel, got " + std::to_string(in.bands));
  rate_hz_ = in.rate_hz;
  channels_ = in.channels;
  bands_ = uint32_t(settings_.bands.size());
  max_frames_ = max_frames;
  const uint32_t max_latency = settings_.max_latency_frames ? settings_.max_latency_frames : max_frames;
  const std::vector<std::vector<float>> taps = FirBankStage::design(settings_, in.rate_hz);
  max_taps_ = 0;
  for (const auto& h : taps) max_taps_ = std::max(max_taps_, h.size());
  // A part of a split stage chooses its form and lays out its kernels for the whole's channels.
  const uint32_t layout_channels = layout_channels_ ? layout_channels_ : channels_;
  direct_ = settings_.form == FirForm::kDirect ||
            (settings_.form == FirForm::kAuto && auto_direct(max_taps_, max_frames, bands_ * layout_channels));
  if (direct_ && max_taps_ > cuda::FirDirectCuda::kMaxTaps)
    throw std::invalid_argument("fir_bank: the CUDA direct form takes at most " +
                                std::to_string(cuda::FirDirectCuda::kMaxTaps) + " taps, got " + std::to_string(max_taps_));
  staging_.prepare(channels_, bands_ * channels_, max_frames_, options_.mapped, 2);
  cpu_ = std::make_unique<CpuTwin>();
  if (direct_) {
    // No delay and no blocks; priming needs the last M - 1 input frames.
    block_ = 0;
    bank_ = std::make_unique<cuda::FirDirectCuda>(taps, channels_, staging_.stream(), max_frames_, layout_channels);
    spare_ = std::make_unique<cuda::FirDirectCuda>(taps, channels_, staging_.stream(), max_frames_, layout_channels);
    cpu_->direct = std::make_unique<FirBank>(taps, channels_, max_frames_);
    history_frames_ = uint32_t(std::max<size_t>(max_taps_ - 1, 1));
  } else {
    // The latency allowed caps the block; within it, the block the GPU runs best (a full chunk
    // of several such blocks goes through in one batch).
    block_ = std::min(PartitionedFirBank::uniform_block_within(std::min(max_latency, max_frames)),
                      cuda::FirBankCuda::preferred_block(max_taps_));
    bank_ = std::make_unique<cuda::FirBankCuda>(taps, channels_, block_, staging_.stream(), max_frames_);
    spare_ = std::make_unique<cuda::FirBankCuda>(taps, channels_, block_, staging_.stream(), max_frames_);
    cpu_->fft = std::make_unique<PartitionedFirBank>(taps, channels_, PartitionedFirBank::uniform(block_));
    // Enough input to rebuild the filter state exactly: M - 1 frames of history for the last
    // output the bank still owes, which lags by B.
    // Rounded up to whole blocks, so a primed filter (a reload's spare) is left on a block boundary
    // like the running one, and its chunks replay as a graph too.
    history_frames_ = uint32_t((block_ + max_taps_ - 1 + block_ - 1) / block_ * block_);
  }
  const size_t out_floats = size_t(bands_) * channels_ * max_frames_;
  history_.assign(channels_, history_frames_, max_frames_, !options_.mapped);
  prime_.assign(size_t(channels_) * history_frames_, 0.0f);
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&reload_stream_, cudaStreamNonBlocking));
  VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&ev_before_reload_, cudaEventDisableTiming));
  VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&ev_primed_, cudaEventDisableTiming));
  prime_pinned_ = cuda::PinnedBuffer(prime_.size() * sizeof(float), false);
  VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_prime_in_), prime_.size() * sizeof(float)));
  VIGIL_CUDA_CHECK(
      cudaMalloc(reinterpret_cast<void**>(&d_prime_out_), size_t(bands_) * channels_ * max_frames_ * sizeof(float)));
  scratch_.assign(out_floats, 0.0f);
  fade_.assign(out_floats, 0.0f);
  // Warm-up: the first launches load the kernels and cuFFT's (lazy module loading) — milliseconds
  // that must not fall on the first real chunk. Then back to a clean state.
  VIGIL_CUDA_CHECK(run_gpu(*bank_, prime_.data(), history_frames_, std::min(max_frames_, history_frames_)));
  bank_->reset();
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(staging_.stream()));
  // A chunk of whole blocks can be replayed as a graph: capture one per filter. Capturing runs
  // nothing; a failure (a driver that cannot capture cuFFT, a debug-sync build) just leaves the
  // launch-by-launch path.
  if (options_.graphs && (direct_ || max_frames_ % block_ == 0))
    for (cuda::FirFilterCuda* bank : {bank_.get(), spare_.get()})
      for (unsigned slot = 0; slot < staging_.input_slots(); ++slot)
        for (const bool copy_in : {true, false})
          if (copy_in || !options_.mapped) capture(*bank, slot, copy_in, false);
  timing_ = true;

  StreamFormat out = in;
  out.bands = bands_;
  out.band_names.clear();
  for (const BandSettings& b : settings_.bands) out.band_names.push_back(b.name);
  out.delay_frames = in.delay_frames + bank_->latency_frames();
  return out;
}

cudaError_t FirBankCudaStage::enqueue(cuda::FirFilterCuda& bank, uint32_t frames, bool from_bound, unsigned slot,
                                      bool copy_in, bool history) noexcept {
  return staging_.enqueue(
      frames,
      [&](const float* d_in, float* d_out, size_t stride) {
        // The input's newest frames into the history first (by kernel: it may be being captured).
        if (history) VIGIL_CUDA_RETURN_IF_ERROR(history_.enqueue(d_in, frames, staging_.stream()));
        return bank.process(d_in, stride, frames, d_out, stride);
      },
      from_bound, nullptr, slot, copy_in);
}

bool FirBankCudaStage::accept_raw_input(SampleFormat format, float scale, uint32_t frame_channels) {
  if (options_.mapped || staging_.input_slots() < 2 || !staging_.copy_stream() ) return false;
  if (frame_channels != 0 && frame_channels < channels_) return false;
  raw_format_ = format;
  raw_scale_ = scale;
  raw_frame_channels_ = frame_channels ? frame_channels : channels_;
  const bool window = raw_frame_channels_ != channels_;
  if (window) raw_window_.resize(size_t(max_frames_) * channels_ * bytes_per_sample(format));
  const size_t bytes = size_t(max_frames_) * channels_ * bytes_per_sample(format), counts = 2 * size_t(channels_);
  for (unsigned s = 0; s < 2; ++s) {
    VIGIL_CUDA_CHECK(cudaMalloc(&d_raw_[s], bytes));
    VIGIL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_counts_[s]), counts * sizeof(unsigned long long)));
    VIGIL_CUDA_CHECK(cudaMemset(d_raw_[s], 0, bytes));
  }
  h_counts_ = cuda::PinnedBuffer(2 * counts * sizeof(unsigned long long), false);
  host_counts_.assign(channels_, ConvertCounts{});
  // Warm-up: the conversion kernel's module loads here, not on the first chunk. (Slot 0's device
  // input is written over by every chunk.)
  VIGIL_CUDA_CHECK(enqueue_raw(0, h_counts_.host(), 1, staging_.stream()));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(staging_.stream()));
  raw_ = true;
  // A whole chunk not uploaded ahead is converted and filtered in one graph replay, the
  // conversion reading it where it was captured (its address in a cell set before each): one
  // launch instead of five and more.
  raw_cell_ = cuda::PinnedBuffer(2 * sizeof(const void*), true);
  known_memory_.reserve(kKnownMemory);
  // (Not for a window of the frames: the conversion kernel reads whole frames.)
  if (options_.graphs && (direct_ || max_frames_ % block_ == 0) && bytes <= kConvertInGraphBytes && !window)
    for (cuda::FirFilterCuda* bank : {bank_.get(), spare_.get()})
      for (unsigned slot = 0; slot < staging_.input_slots(); ++slot) capture(*bank, slot, false, true);
  return true;
}

cuda::ConvertParams FirBankCudaStage::convert_params(unsigned slot, uint32_t first, uint32_t frames) const noexcept {
  cuda::ConvertParams p;
  p.format = raw_format_;
  p.frames = frames;
  p.channels = channels_;
  p.scale = raw_scale_;
  p.d_out = staging_.device_in(slot) + first;
  p.out_stride_frames = max_frames_;
  p.d_counts = d_counts_[slot];  // added to
  return p;
}

cudaError_t FirBankCudaStage::zero_counts(unsigned slot, cudaStream_t stream) noexcept {
  return cudaMemsetAsync(d_counts_[slot], 0, 2 * size_t(channels_) * sizeof(unsigned long long), stream);
}

cudaError_t FirBankCudaStage::copy_counts_back(unsigned slot, cudaStream_t stream) noexcept {
  const size_t counts = 2 * size_t(channels_) * sizeof(unsigned long long);
  return cudaMemcpyAsync(h_counts_.host<unsigned long long>() + slot * 2 * size_t(channels_), d_counts_[slot], counts,
                         cudaMemcpyDeviceToHost, stream);
}

cudaError_t FirBankCudaStage::enqueue_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames,
                                           cudaStream_t stream) noexcept {
  const size_t frame_bytes = size_t(channels_) * bytes_per_sample(raw_format_);
  const size_t captured_frame_bytes = size_t(raw_frame_channels_) * bytes_per_sample(raw_format_);
  if (first == 0) VIGIL_CUDA_RETURN_IF_ERROR(zero_counts(slot, stream));
  if (frames == 0) return cudaSuccess;
  std::byte* to = static_cast<std::byte*>(d_raw_[slot]) + size_t(first) * frame_bytes;
  const std::byte* from = static_cast<const std::byte*>(raw) + size_t(first) * captured_frame_bytes;
  if (captured_frame_bytes == frame_bytes)
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(to, from, size_t(frames) * frame_bytes, cudaMemcpyHostToDevice, stream));
  else  // a split's part: its channels' bytes of each frame
    VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(to, frame_bytes, from, captured_frame_bytes, frame_bytes, frames,
                                                 cudaMemcpyHostToDevice, stream));
  cuda::ConvertParams p = convert_params(slot, first, frames);
  p.d_in = static_cast<const std::byte*>(d_raw_[slot]) + size_t(first) * frame_bytes;
  return cuda::launch_convert_to_planar(p, stream);
}

cudaError_t FirBankCudaStage::enqueue_raw(unsigned slot, const void* raw, uint32_t frames, cudaStream_t stream,
                                          uint32_t frames_up) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(enqueue_part(slot, raw, frames_up, frames - std::min(frames, frames_up), stream));
  return copy_counts_back(slot, stream);
}

void FirBankCudaStage::read_counts(unsigned slot) noexcept {
  const unsigned long long* c = h_counts_.host<unsigned long long>() + slot * 2 * size_t(channels_);
  last_clipped_ = last_non_finite_ = 0;
  for (uint32_t ch = 0; ch < channels_; ++ch) {
    last_clipped_ += c[2 * ch];
    last_non_finite_ += c[2 * ch + 1];
  }
}

void FirBankCudaStage::convert_on_host(const void* raw, const Block& in) noexcept {
  std::fill(host_counts_.begin(), host_counts_.end(), ConvertCounts{});
  if (raw_frame_channels_ != channels_) {  // a split's part: its window of each frame, gathered first
    const size_t bytes = size_t(channels_) * bytes_per_sample(raw_format_);
    const size_t captured = size_t(raw_frame_channels_) * bytes_per_sample(raw_format_);
    for (uint32_t f = 0; f < in.frames; ++f)
      std::memcpy(raw_window_.data() + f * bytes, static_cast<const std::byte*>(raw) + f * captured, bytes);
    raw = raw_window_.data();
  }
  convert_to_planar(raw, raw_format_, in.frames, channels_, raw_scale_, in.data, in.stride, host_counts_.data());
  last_clipped_ = last_non_finite_ = 0;
  for (const ConvertCounts& c : host_counts_) {
    last_clipped_ += c.clipped;
    last_non_finite_ += c.non_finite;
  }
}

bool FirBankCudaStage::upload_input_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames) noexcept {
  if (twin_.on_cpu() || slot >= staging_.input_slots() || !raw_ || !raw) return false;
  if (uint64_t(first) + frames > max_frames_) return false;
  // The slot is free: the chunk that used it last has run (chunks run one at a time, and the
  // look-ahead fills a slot only while the other one runs). The part is converted as it lands.
  if (enqueue_part(slot, raw, first, frames, staging_.copy_stream()) != cudaSuccess) {
    cudaGetLastError();  // the chunk then copies all of itself, where any lasting error shows
    return false;
  }
  parts_uploaded_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool FirBankCudaStage::upload_input(unsigned slot, uint32_t frames, const void* raw, uint32_t frames_up) noexcept {
  if (twin_.on_cpu() || slot >= staging_.input_slots()) return false;
  if (raw && !raw_) return false;
  cudaError_t e = cudaSuccess;
  if (raw) {  // raw_: the copy stream is there (accept_raw_input)
    e = enqueue_raw(slot, raw, frames, staging_.copy_stream(), frames_up);
    if (e == cudaSuccess) e = staging_.mark_uploaded(slot, frames);
  } else {
    e = staging_.upload(slot, frames);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();  // the chunk then makes its own copy, where any lasting error shows
    staging_.drop_upload(slot);
    return false;
  }
  return true;
}

cudaError_t FirBankCudaStage::enqueue_convert_from_cell(unsigned slot) noexcept {
  const cudaStream_t stream = staging_.stream();
  VIGIL_CUDA_RETURN_IF_ERROR(zero_counts(slot, stream));
  cuda::ConvertParams p = convert_params(slot, 0, max_frames_);
  p.d_in_cell = raw_cell_.device<const void*>() + slot;
  VIGIL_CUDA_RETURN_IF_ERROR(cuda::launch_convert_to_planar(p, stream));
  return copy_counts_back(slot, stream);
}

bool FirBankCudaStage::capture(cuda::FirFilterCuda& bank, unsigned slot, bool copy_in, bool convert) noexcept {
  // Capturing runs nothing, but enqueue() advances the bank's host-side fill count as if it had:
  // a whole-block chunk leaves it as it found it (0).
  if (bank.fill() != 0) return false;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(staging_.stream(), cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  // The graph reads a chunk where process() will find it: the bound input when there is one. It
  // records a pair of GPU-time events of its own (CudaStaging::run's events_in_launch).
  cudaError_t e = staging_.record_captured_event(false);
  if (e == cudaSuccess && convert) e = enqueue_convert_from_cell(slot);
  if (e == cudaSuccess) e = enqueue(bank, max_frames_, staging_.has_bound_input(), slot, copy_in, history_.by_kernel());
  if (e == cudaSuccess) e = staging_.record_captured_event(true);
  const cudaError_t end = cudaStreamEndCapture(staging_.stream(), &graph);
  history_.discard();  // the capture's arm() was no chunk's
  if (e == cudaSuccess) e = end;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (e != cudaSuccess || bank.fill() != 0) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGetLastError();  // not sticky: leave no error for the next call to find
    return false;
  }
  graphs_.push_back({&bank, exec, staging_.copy_out(), slot, copy_in, convert, history_.by_kernel()});
  return true;
}

const FirBankCudaStage::ChunkGraph* FirBankCudaStage::graph_for(const cuda::FirFilterCuda& bank, unsigned slot,
                                                                 bool copy_in, bool convert) const noexcept {
  for (const ChunkGraph& g : graphs_)
    if (g.bank == &bank && g.copy_out == staging_.copy_out() && g.slot == slot && g.copy_in == copy_in &&
        g.convert == convert)
      return &g;
  return nullptr;
}

bool FirBankCudaStage::page_locked(const void* p) noexcept {
  for (const KnownMemory& k : known_memory_)
    if (k.at == p) return k.page_locked;
  cudaPointerAttributes a{};
  const bool locked = cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost;
  cudaGetLastError();  // (an older runtime's answer for plain memory)
  if (known_memory_.size() < kKnownMemory) known_memory_.push_back({p, locked});  // the pool's chunks: a few
  return locked;
}

const FirBankCudaStage::ChunkGraph* FirBankCudaStage::convert_graph(const cuda::FirFilterCuda& bank, unsigned slot,
                                                                     const void* raw) noexcept {
  const ChunkGraph* g = graph_for(bank, slot, false, true);
  // The kernel reads the chunk across the bus: only from page-locked memory (the CUDA backend's
  // chunk pool, unless that much could not be locked).
  if (!g || !page_locked(raw)) return nullptr;
  raw_cell_.host<const void*>()[slot] = raw;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the cell's store before the launch's
  return g;
}

cudaError_t FirBankCudaStage::launch_gpu(cuda::FirFilterCuda& bank, const float* in, size_t in_stride, uint32_t frames,
                                         bool chunk, const void* raw) noexcept {
  staging_.stage(in, in_stride, frames);  // into slot 0, unless `in` is a staged input already
  const bool from_bound = staging_.reads_bound(in);
  const int at = staging_.slot_of(in);
  const unsigned slot = at < 0 ? 0 : unsigned(at);
  bool copy_in = true;
  if (!from_bound) VIGIL_CUDA_RETURN_IF_ERROR(staging_.take_upload(slot, frames, copy_in));
  if (!copy_in && timing_) uploaded_ahead_.fetch_add(1, std::memory_order_relaxed);
  // Raw input without an upload ahead: the chunk goes up and is converted on this stream first;
  // either way the float input is then on the device, and the work makes no copy in.
  bool convert_here = raw && copy_in;
  if (raw) copy_in = false;
  // A chunk's (not a priming's) newest input frames back into the history, in copy mode: by
  // kernel inside the work (and any graph), else after it.
  const bool history = chunk && history_.from_device();
  const bool whole = frames == max_frames_ && bank.fill() == 0 && from_bound == staging_.has_bound_input();
  const ChunkGraph* graph = whole && convert_here ? convert_graph(bank, slot, raw) : nullptr;
  if (graph) {
    convert_here = false;
  } else if (whole) {
    graph = graph_for(bank, slot, copy_in, false);
  }
  // (A graph replayed for no chunk, the crossfade's second filter, writes the history again where
  // the chunk's own replay just armed it to, with the same frames.)
  if (graph && graph->history && history) history_.arm(frames);
  return staging_.launch(
      [&]() -> cudaError_t {
        if (convert_here) VIGIL_CUDA_RETURN_IF_ERROR(enqueue_raw(slot, raw, frames, staging_.stream()));
        if (!graph) {
          VIGIL_CUDA_RETURN_IF_ERROR(enqueue(bank, frames, from_bound, slot, copy_in, history && history_.by_kernel()));
        } else {
          if (timing_) graph_chunks_.fetch_add(1, std::memory_order_relaxed);
          if (timing_ && graph->convert) converted_in_graph_.fetch_add(1, std::memory_order_relaxed);
          VIGIL_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph->exec, staging_.stream()));
        }
        return history && !history_.by_kernel()
                   ? history_.enqueue(staging_.device_in(from_bound ? 0 : slot), frames, staging_.stream())
                   : cudaSuccess;
      },
      // The graph's own events when it is all the chunk's GPU work (else launch()'s, around all of it).
      timing_, graph && !convert_here && !(history && !history_.by_kernel()));
}

cudaError_t FirBankCudaStage::run_gpu(cuda::FirFilterCuda& bank, const float* in, size_t in_stride, uint32_t frames,
                                      bool chunk, const void* raw) noexcept {
  VIGIL_CUDA_RETURN_IF_ERROR(launch_gpu(bank, in, in_stride, frames, chunk, raw));
  return staging_.finish();
}

void FirBankCudaStage::unwrap_history() noexcept { history_.newest(history_frames_, prime_.data(), history_frames_); }

cudaError_t FirBankCudaStage::prime_gpu(cuda::FirFilterCuda& bank) noexcept {
  // The page-locked history is free once an earlier priming's copy from it is done (the chunk
  // that crossfaded to that reload waited for it already: this returns at once).
  VIGIL_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(ev_primed_));
  float* h = prime_pinned_.host<float>();
  history_.newest(history_frames_, h, history_frames_);
  VIGIL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_prime_in_, h, size_t(channels_) * history_frames_ * sizeof(float),
                                             cudaMemcpyHostToDevice, reload_stream_));
  for (uint32_t at = 0; at < history_frames_;) {
    const uint32_t n = std::min(max_frames_, history_frames_ - at);
    VIGIL_CUDA_RETURN_IF_ERROR(bank.process(d_prime_in_ + at, history_frames_, n, d_prime_out_, max_frames_));
    at += n;
  }
  return cudaEventRecord(ev_primed_, reload_stream_);
}

void FirBankCudaStage::prime_cpu() noexcept {
  unwrap_history();
  cpu_->reset();
  cpu_->prime(prime_.data(), history_frames_, scratch_.data(), max_frames_);
}

void FirBankCudaStage::fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error,
                                 const void* raw) noexcept {
  if (raw) convert_on_host(raw, in);  // the twin reads the chunk on the host
  prime_cpu();  // the state the GPU bank had before this chunk, rebuilt from the input history
  cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
  twin_.hand_over(exec, error,
                  history_.complete() ? "" : " (primed from an input history the failure may have cut short)");
}

StageStatus FirBankCudaStage::process(const Block& in, Block& out, const Exec& exec) noexcept {
  return finish_now(in, out, exec);
}

bool FirBankCudaStage::begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept {
  out.frames = in.frames;
  staging_.begin_chunk(in.frames);  // the bands on the host only, unless the plain GPU path below runs
  const int slot = staging_.slot_of(in.data);
  const void* raw = raw_ && slot >= 0 ? exec.raw_input : nullptr;  // the chunk as captured: in.data not filled
  last_clipped_ = last_non_finite_ = 0;
  history_.discard();
  done = StageStatus::kOk;
  if (twin_.on_cpu()) {
    if (slot >= 0) staging_.drop_upload(unsigned(slot));
    if (raw) convert_on_host(raw, in);
    cpu_->process(in.data, in.stride, in.frames, out.data, out.stride);
    return false;
  }
  cudaError_t e = twin_.begin_chunk(staging_.stream());
  if (raw && (e != cudaSuccess || next_bank_)) {  // the CPU twin or the crossfade read the chunk on the host
    staging_.drop_upload(unsigned(slot));
    convert_on_host(raw, in);
    raw = nullptr;
  }
  if (e == cudaSuccess) e = launch_gpu(*bank_, in.data, in.stride, in.frames, true, raw);
  if (e == cudaSuccess) {
    pending_slot_ = slot;
    pending_raw_ = raw;
    return true;
  }
  done = complete(in, out, exec, e, slot, raw);
  return false;
}

StageStatus FirBankCudaStage::finish(const Block& in, Block& out, const Exec& exec) noexcept {
  return complete(in, out, exec, staging_.finish(), pending_slot_, pending_raw_);
}

StageStatus FirBankCudaStage::complete(const Block& in, Block& out, const Exec& exec, cudaError_t e, int slot,
                                       const void* raw) noexcept {
  if (e != cudaSuccess && slot >= 0) staging_.drop_upload(unsigned(slot));  // the CPU twin takes the chunk
  if (e == cudaSuccess && next_bank_ && staging_.keeps_output()) {  // the crossfade is made on the host: bring the old filter's bands back
    staging_.set_copy_out(true);
    e = staging_.fetch_out(in.frames);
  }
  if (e == cudaSuccess && next_bank_) {  // a reload: crossfade from the old taps to the new over this chunk
    const float* h = staging_.host_out();
    std::copy(h, h + size_t(bands_) * channels_ * max_frames_, fade_.begin());
    e = cudaStreamWaitEvent(staging_.stream(), ev_primed_, 0);  // the spare primed on the reload stream
    if (e == cudaSuccess) e = run_gpu(*next_bank_, in.data, in.stride, in.frames);  // (no chunk: the history has it)
    if (e == cudaSuccess) {
      h = staging_.host_out();
      for (size_t lane = 0; lane < size_t(bands_) * channels_; ++lane)
        for (uint32_t i = 0; i < in.frames; ++i) {
          const float w = float(i + 1) / float(in.frames);
          const size_t k = lane * max_frames_ + i;
          fade_[k] = (1.0f - w) * fade_[k] + w * h[k];
        }
      staging_.restore_copy_out();
      spare_ = std::move(bank_);  // the old filter is the next reload's spare
      bank_ = std::move(next_bank_);
      for (size_t lane = 0; lane < size_t(bands_) * channels_; ++lane)
        std::memcpy(out.data + lane * out.stride, fade_.data() + lane * max_frames_, in.frames * sizeof(float));
      history_.commit(in);
      return StageStatus::kOk;
    }
  }
  if (e != cudaSuccess) {
    staging_.restore_copy_out();
    if (next_bank_) spare_ = std::move(next_bank_);  // the CPU twin already has the new taps (apply_update)
    fall_back(in, out, exec, e, raw);
    return StageStatus::kOk;
  }
  if (staging_.output_on_device()) staging_.unstage(out.data, out.stride, in.frames);
  if (raw) read_counts(unsigned(slot));
  history_.commit(in);
  return StageStatus::kOk;
}

void FirBankCudaStage::reset() noexcept {
  // A failed reset: the next process() moves to the CPU twin (reset below). An error already
  // deferred stays.
  if (bank_ && !twin_.on_cpu()) twin_.defer(cuda::error_of([&] { bank_->reset(); }));
  if (cpu_) cpu_->reset();
  history_.clear();
}

StageUpdatePlan FirBankCudaStage::plan_update(const StageSettings& next) const {
  return FirBankStage::plan_fir_update(settings_, next, rate_hz_);
}

bool FirBankCudaStage::apply_update(StageUpdate& update) noexcept {
  auto& u = static_cast<FirBankUpdate&>(update);
  try {
    // The twin follows: crossfading itself if it is the one running; otherwise it takes the new
    // taps at once (the direct form's FirBank from the first frame priming feeds it: a crossfade
    // of its own 256 frames would outlast the M - 1 frames of priming and reach the first chunk it
    // filters after a failure; the FFT form's switches within priming's first block).
    if (direct_ && !twin_.on_cpu())
      cpu_->direct->set_taps(u.taps, 1);
    else
      cpu_->set_taps(u.taps);
  } catch (...) {  // out of memory for the twin's new spectra: nothing changed on the GPU either
    return false;
  }
  settings_ = std::move(u.settings);  // (a copy could throw: the update is spent anyway)
  if (twin_.on_cpu() || !spare_) return true;
  // The spare gets the new taps and the state the new filter would have had (same history);
  // the next chunk crossfades to it. A failure is handled by the next process() like any other:
  // the CPU twin, with the new taps, takes over.
  // All of it on the reload stream: the taps' upload and spectra, the reset, the priming. The
  // pipeline thread only enqueues; the next chunk's crossfade waits for it on the GPU.
  // The spare's last use (the running filter before an earlier reload) was on the staging
  // stream: the reload stream starts after it.
  cudaError_t e = spare_->set_stream(reload_stream_);
  if (e == cudaSuccess) e = cudaEventRecord(ev_before_reload_, staging_.stream());
  if (e == cudaSuccess) e = cudaStreamWaitEvent(reload_stream_, ev_before_reload_, 0);
  if (e == cudaSuccess) e = spare_->set_taps(u.taps);
  if (e == cudaSuccess) e = cuda::error_of([&] { spare_->reset(); });
  if (e == cudaSuccess) e = prime_gpu(*spare_);
  if (const cudaError_t back = spare_->set_stream(staging_.stream()); e == cudaSuccess) e = back;
  if (e == cudaSuccess)
    next_bank_ = std::move(spare_);
  else
    twin_.defer(e);  // the next process() moves to the CPU twin, which has the new taps
  return true;
}

void FirBankCudaStage::describe_event(const EventRecord& ev, nlohmann::json& body) const {
  describe_cuda_fallback(ev, body);
}

void FirBankCudaStage::add_status(nlohmann::json& status) const {
  staging_.add_status(status, on_cpu(), twin_.errors());
  status["graph_chunks"] = graph_chunks();
  status["converted_in_graph_chunks"] = converted_in_graph_.load(std::memory_order_relaxed);
  status["uploaded_ahead_chunks"] = uploaded_ahead_chunks();
  status["parts_uploaded_while_captured"] = parts_uploaded();
  status["input_converted_on_gpu"] = raw_;
  status["form"] = direct_ ? "direct" : "fft (uniform partitions of " + std::to_string(block_) + ")";
  status["delay_frames"] = block_;  // the bank's latency (0 in direct form; fixed at prepare, the spare's too)
}

}  // namespace vigil
