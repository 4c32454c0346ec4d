// FirBankCudaStage: the fir_bank stage on the CUDA backend. Each chunk's input lanes go to the
// GPU through page-locked staging (copied with cudaMemcpy2DAsync, or read in place by the kernels
// when the memory is mapped: `pipeline.memory`), the GPU filters every band, and the bands come
// back the same way. Two forms (the `form` key; auto: the direct form for short filters and short
// chunks, auto_direct): cuda/FirDirectCuda, no delay, the twin of dsp/FirBank; or
// cuda/FirBankCuda, uniform partitions of B, latency B, the twin of dsp/PartitionedFirBank. One
// stream, synchronised once per chunk, GPU time measured with CUDA events. A whole chunk's work
// (copy in, every block's kernels and FFTs, copy out) is captured as a CUDA graph at prepare,
// once per filter (the running one and the reload spare), and replayed for every full-size chunk
// that starts on a block boundary (the direct form: every full-size chunk): one launch instead of
// ~5 per block. Other chunks take the same path launch by launch (same results: the filter's
// state lives on the device either way).
// The look-ahead: the staging has two input slots; while this chunk's kernels run, the graph may
// convert the next chunk into the other slot and start its copy to the device on a copy stream
// (upload_input), and that chunk's work then waits for the copy instead of making it (graphs are
// captured for each slot, with and without their copy in).
// Raw input (accept_raw_input, where the graph allows it): each chunk comes as captured, its
// interleaved samples are copied up as they are (half the bytes for int16) and converted on the
// device into the slot's staged input by cuda/sample_convert, which counts clipped and non-finite
// samples; the host converts the chunk only when the CPU twin or a reload's crossfade needs it.
// A part of a channel split takes its window of the captured frames (a 2-D copy: its channels'
// bytes of each frame) and converts only those.
// A whole chunk (up to 4 MiB) not uploaded ahead is converted and filtered by one replay of a
// converting graph, its conversion reading the page-locked chunk across the bus from an address
// set in a mapped cell before each replay: each CUDA call costs the pipeline thread 2-30 us on
// the GPU hosts measured, and S2's chunk made a dozen.
// In copy mode the input history comes back from the device (StagedInputHistory), as many of
// each chunk's newest frames as priming reads, with no host copy: up to 256 KiB a chunk by a kernel
// that writes the page-locked ring, inside the chunk's graph; larger ones
// snapshotted on the device and copied on the history's own stream while the later stages run.
// The FFT form's block: the latency allowed caps it, and within that the GPU's preferred block
// (FirBankCuda::preferred_block: one partition, a one-pass FFT; 4096 for up to 4096 taps); a full
// chunk of several such blocks goes through in one cuFFT batch.
//
// A CUDA error on the real-time path is counted, reported once (a `backend` event, state
// fallback) and the stage carries on on the CPU twin — the same form, layout and latency —
// primed from the last input frames it keeps (M - 1 for the direct form; B + M - 1 rounded up to
// whole blocks for the FFT form), so the chunk that failed and every later one are filtered as
// if the CPU had run from the start: no chunk lost.
// A reload's new taps go into a spare filter of the same shape made at prepare (nothing is
// allocated or planned while running: that would stall the GPU), primed from the same history,
// and crossfaded to over one chunk. The taps' upload and spectra and the priming run on a
// stream of their own: the pipeline thread only enqueues them, and the crossfade's chunk waits
// for them on the GPU.
// Only built with CUDA (VIGIL_HAVE_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "config/settings.hpp"
#include "cuda/fir_bank_cuda.hpp"
#include "cuda/fir_filter_cuda.hpp"
#include "cuda/pinned_buffer.hpp"
#include "cuda/sample_convert.cuh"
#include "dsp/fir_bank.hpp"
#include "dsp/partitioned_fir_bank.hpp"
#include "dsp/sample_convert.hpp"
#include "stages/cuda_staging.hpp"
#include "stages/cuda_twin.hpp"
#include "stages/staged_input_history.hpp"
#include "stages/stage.hpp"

namespace vigil {

struct CudaStageOptions {
  bool mapped = false;         // zero-copy staging (pipeline.memory: mapped)
  uint64_t fail_at_chunk = 0;  // test-only: the launch for this chunk (1-based) fails; 0: never
  bool graphs = true;          // replay full chunks as CUDA graphs (off: launch by launch, for comparison)
  // The detector stages' graphs too (MomentsCudaStage; pipeline.cuda_graphs: all): off by default,
  // as on the H200 they gained nothing measurable (bench/results/LOG.md §11, 2026-11-26).
  bool detector_graphs = false;
};

class FirBankCudaStage final : public Stage, public GpuStage {
 public:
  // form: auto takes the direct form (cuda/FirDirectCuda) for filters of up to this many taps:
  // the crossover measured on the H100 (bench/results/LOG.md §4);
  static constexpr size_t kDirectMaxTaps = 384;
  // and for chunks of few products (frames x lanes x taps), a long filter over a short chunk
  // (S3: 256 frames x 8 lanes x 8191 taps, 16.8 M), where one launch of the split kernel beats the
  // FFT form's chain of small kernels, and the bands come without the FFT form's block of delay.
  // On the H200 (bench/fir_cuda_bench BM_ShortChunkCuda, 4 bands, bench/results/LOG.md §11) the
  // direct form won at 16.8 M products (S3: 11.0 against 17.3 us; 2048 taps x 1024 frames x 8
  // lanes: 10.9 against 12.6) and lost at 2048 taps x 256 frames x 64 lanes (33.5 M: 13.9 against
  // 12.5), while at 16384 taps x 256 frames x 8 lanes (33.5 M too) it won (14.7 against 24.6).
  static constexpr uint64_t kDirectMaxProducts = uint64_t(24) << 20;
  static bool auto_direct(size_t taps, uint32_t max_frames, uint32_t lanes) noexcept {
    return taps <= kDirectMaxTaps || uint64_t(taps) * max_frames * lanes <= kDirectMaxProducts;
  }

  FirBankCudaStage(FirBankSettings settings, uint16_t index, CudaStageOptions options);
  ~FirBankCudaStage() override;

  StreamFormat prepare(const StreamFormat& in, uint32_t max_frames) override;
  StageStatus process(const Block& in, Block& out, const Exec& exec) noexcept override;
  void reset() noexcept override;
  StageUpdatePlan plan_update(const StageSettings& next) const override;
  bool apply_update(StageUpdate& update) noexcept override;
  void describe_event(const EventRecord& ev, nlohmann::json& body) const override;
  void add_status(nlohmann::json& status) const override;
  // The staging's page-locked buffers, for the graph to spare host copies (Stage).
  void bind_input(const float* page_locked) noexcept override { staging_.bind_input(page_locked); }
  float* output_buffer() const noexcept override { return staging_.host_out(); }
  float* input_buffer() const noexcept override { return staging_.host_in(); }
  float* input_slot(unsigned slot) const noexcept override {
    return slot < staging_.input_slots() ? staging_.host_in(slot) : nullptr;
  }
  bool upload_input(unsigned slot, uint32_t frames, const void* raw, uint32_t frames_up = 0) noexcept override;
  bool upload_input_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames) noexcept override;
  bool accept_raw_input(SampleFormat format, float scale, uint32_t frame_channels = 0) override;
  void input_counts(uint64_t& clipped, uint64_t& non_finite) const noexcept override {
    clipped = last_clipped_;
    non_finite = last_non_finite_;
  }
  // Device residency (Stage): the bands may stay on the device for a reader that takes them there.
  void keep_output_on_device(bool keep) noexcept override { staging_.keep_output(keep); }
  const float* device_output() const noexcept override { return staging_.chunk_device_out(); }
  bool make_output_host_valid(uint32_t frames) noexcept override { return staging_.make_output_host_valid(frames); }
  void set_layout_channels(uint32_t channels) noexcept override { layout_channels_ = channels; }
  // Two-phase work (GpuStage): begin() queues the bank's chunk, finish() takes the bands (for a
  // reload's crossfade, it then runs the new filter too and fades from the one to the other).
  bool two_phase() const noexcept override { return true; }
  bool begin(const Block& in, Block& out, const Exec& exec, StageStatus& done) noexcept override;
  bool busy() noexcept override { return staging_.busy(); }
  StageStatus finish(const Block& in, Block& out, const Exec& exec) noexcept override;

  bool on_cpu() const noexcept { return twin_.on_cpu(); }
  // Chunks run as a replayed CUDA graph so far; chunks whose copy in was under way before their
  // turn (the look-ahead's uploads taken).
  uint64_t graph_chunks() const noexcept { return graph_chunks_.load(std::memory_order_relaxed); }
  // Of those, chunks taken raw that went up and were converted inside the graph.
  uint64_t converted_in_graph_chunks() const noexcept { return converted_in_graph_.load(std::memory_order_relaxed); }
  uint64_t uploaded_ahead_chunks() const noexcept { return uploaded_ahead_.load(std::memory_order_relaxed); }
  // Raw input: parts of chunks copied up while those chunks were still being captured.
  uint64_t parts_uploaded() const noexcept { return parts_uploaded_.load(std::memory_order_relaxed); }
  uint32_t block() const noexcept { return block_; }  // the FFT form's block (0: the direct form)
  bool direct() const noexcept { return direct_; }

 private:
  // The CPU twin: dsp/FirBank for the direct form, dsp/PartitionedFirBank (same uniform layout
  // and latency) for the FFT form.
  struct CpuTwin {
    std::unique_ptr<FirBank> direct;
    std::unique_ptr<PartitionedFirBank> fft;
    void process(const float* in, size_t in_stride, uint32_t frames, float* out, size_t out_stride) noexcept {
      if (direct)
        direct->process(in, in_stride, frames, out, out_stride);
      else
        fft->process(in, in_stride, frames, out, out_stride);
    }
    void reset() noexcept { direct ? direct->reset() : fft->reset(); }
    // Feeds `frames` of input (lane c at in + c * frames) as if they had been filtered: the direct
    // form's state is its history, a copy (8 190 frames for S3's taps); the FFT form filters them
    // in chunks of max_frames into scratch, to rebuild its blocks.
    void prime(const float* in, uint32_t frames, float* scratch, uint32_t max_frames) noexcept {
      if (direct) return direct->prime(in, frames, frames);
      for (uint32_t at = 0; at < frames;) {
        const uint32_t n = std::min(max_frames, frames - at);
        fft->process(in + at, frames, n, scratch, max_frames);
        at += n;
      }
    }
    void set_taps(const std::vector<std::vector<float>>& taps) { direct ? direct->set_taps(taps) : fft->set_taps(taps); }
  };

  // in: `frames` frames of every channel (lane c at in + c * in_stride) -> the bands, staged:
  // queued (launch_gpu), or queued and waited for (run_gpu). chunk: a chunk's (its newest frames
  // go into the history), not a priming's or the warm-up's. raw: the chunk as captured (raw
  // input): it goes up and is converted on the device first, unless its upload already did that.
  cudaError_t launch_gpu(cuda::FirFilterCuda& bank, const float* in, size_t in_stride, uint32_t frames,
                         bool chunk = false, const void* raw = nullptr) noexcept;
  cudaError_t run_gpu(cuda::FirFilterCuda& bank, const float* in, size_t in_stride, uint32_t frames,
                      bool chunk = false, const void* raw = nullptr) noexcept;
  // The chunk after the bank's first run (its error e): the crossfade of a reload, the hand-over
  // to the CPU twin on an error, or the bands to the output.
  StageStatus complete(const Block& in, Block& out, const Exec& exec, cudaError_t e, int slot, const void* raw) noexcept;
  int pending_slot_ = -1;               // the queued chunk's staged input (-1: none)
  const void* pending_raw_ = nullptr;   // and its raw samples (raw input)
  // Raw input: the chunk's samples to the slot's device input on `stream` (copy, conversion,
  // counts back to the host); the host-side conversion into a block's lanes (with the counts);
  // the newest frames into the history; the counts of the slot's last device conversion.
  // frames_up: the first frames are in the slot's device input already (upload_input_part).
  cudaError_t enqueue_raw(unsigned slot, const void* raw, uint32_t frames, cudaStream_t stream,
                          uint32_t frames_up = 0) noexcept;
  // Frames [first, first + frames) of the chunk up and converted into the slot's device input,
  // counting into its counts (zeroed with the first part).
  cudaError_t enqueue_part(unsigned slot, const void* raw, uint32_t first, uint32_t frames, cudaStream_t stream) noexcept;
  // The conversion's parameters but its source: frames [first, first + frames) into the slot's
  // device input, counting into the slot's counts. The counts zeroed, and copied back to the host.
  cuda::ConvertParams convert_params(unsigned slot, uint32_t first, uint32_t frames) const noexcept;
  cudaError_t zero_counts(unsigned slot, cudaStream_t stream) noexcept;
  cudaError_t copy_counts_back(unsigned slot, cudaStream_t stream) noexcept;
  void convert_on_host(const void* raw, const Block& in) noexcept;
  void read_counts(unsigned slot) noexcept;
  // The device part of a chunk from the staged input (slot) to the staged output, on the stream.
  // from_bound: the chunk is read in place from the bound input (CudaStaging::bind_input);
  // copy_in false: the slot's upload brought it; history: the input's newest frames into the
  // history by kernel (StagedInputHistory::by_kernel()) too.
  cudaError_t enqueue(cuda::FirFilterCuda& bank, uint32_t frames, bool from_bound, unsigned slot = 0,
                      bool copy_in = true, bool history = false) noexcept;
  struct ChunkGraph;
  // Captures enqueue(bank, max_frames_, ..., slot, copy_in, history by kernel) as a graph, after
  // enqueue_convert_from_cell() when `convert`; false (and no graph) on failure.
  bool capture(cuda::FirFilterCuda& bank, unsigned slot, bool copy_in, bool convert) noexcept;
  // A whole chunk converted into the slot's device input from where raw_cell_[slot] points (the
  // counts zeroed first and copied back after), on the stage's stream.
  cudaError_t enqueue_convert_from_cell(unsigned slot) noexcept;
  const ChunkGraph* graph_for(const cuda::FirFilterCuda& bank, unsigned slot, bool copy_in, bool convert) const noexcept;
  // The converting graph for a chunk at `raw` in `slot`, its cell set to it (null: none, or the
  // chunk is not in page-locked memory: it then goes up by its own copy).
  const ChunkGraph* convert_graph(const cuda::FirFilterCuda& bank, unsigned slot, const void* raw) noexcept;
  bool page_locked(const void* p) noexcept;  // cudaPointerGetAttributes, remembered per address
  // Runs the last history_ frames through `bank` (GPU: enqueued on the reload stream, ev_primed_
  // recorded after it) or the CPU twin, discarding the output.
  cudaError_t prime_gpu(cuda::FirFilterCuda& bank) noexcept;
  void prime_cpu() noexcept;
  void unwrap_history() noexcept;                // ring -> prime_ (oldest first)
  // raw: the chunk as captured when its input block was not filled (raw input).
  void fall_back(const Block& in, Block& out, const Exec& exec, cudaError_t error, const void* raw = nullptr) noexcept;

  FirBankSettings settings_;
  uint16_t index_;
  CudaStageOptions options_;
  double rate_hz_ = 0;
  uint32_t channels_ = 0, bands_ = 0, max_frames_ = 0, block_ = 0;
  uint32_t layout_channels_ = 0;  // a split's whole channel count (set_layout_channels), 0: channels_
  size_t max_taps_ = 0;
  CudaStaging staging_;  // before the filters: its stream outlives them
  // The running filter, the one a reload crossfades to, and a spare of the same shape: a reload
  // uploads its taps into the spare (no allocation, no cuFFT plan on the running GPU).
  std::unique_ptr<cuda::FirFilterCuda> bank_, next_bank_, spare_;
  bool direct_ = false;  // the direct form (else uniformly partitioned overlap-save)
  std::unique_ptr<CpuTwin> cpu_;  // the fallback twin, same form and latency
  struct ChunkGraph {
    const cuda::FirFilterCuda* bank = nullptr;
    cudaGraphExec_t exec = nullptr;
    bool copy_out = true;  // with the copy back (it is skipped while the bands stay on the device)
    unsigned slot = 0;     // the staged input it reads
    bool copy_in = true;   // with its copy in (false: the look-ahead's upload made it)
    bool convert = false;  // raw input: the chunk's conversion (from raw_cell_) and counts first
    bool history = false;  // writes the input history by kernel (arm() before each replay)
  };
  // Per filter (bank_ and spare_ at prepare), slot and copy in; with raw input, per filter and
  // slot a converting one.
  std::vector<ChunkGraph> graphs_;
  std::atomic<uint64_t> graph_chunks_{0};
  std::atomic<uint64_t> converted_in_graph_{0};  // of those, converting graphs
  // Converting graphs read the chunk across the bus: only chunks up to this size (a larger one's
  // own copy moves it faster than the kernel's reads: S1's chunk is 2 MB at 16 channels, 100 MB
  // at 800).
  static constexpr size_t kConvertInGraphBytes = size_t(4) << 20;
  cuda::PinnedBuffer raw_cell_;  // per slot: the chunk a converting graph reads (mapped)
  struct KnownMemory {
    const void* at;
    bool page_locked;
  };
  static constexpr size_t kKnownMemory = 64;
  std::vector<KnownMemory> known_memory_;  // page_locked()'s answers
  std::atomic<uint64_t> uploaded_ahead_{0};
  std::atomic<uint64_t> parts_uploaded_{0};
  StagedInputHistory history_;               // the newest history_frames_ input frames
  uint32_t history_frames_ = 0;
  std::vector<float> prime_;                 // unwrapped history, channels x history_frames_
  // A reload primes the spare on a stream of its own, off the pipeline thread's path: the
  // history goes up from page-locked memory, the spare's output is discarded on the device, and
  // the crossfade's chunk waits for ev_primed_ on the GPU.
  cudaStream_t reload_stream_ = nullptr;
  cudaEvent_t ev_before_reload_ = nullptr, ev_primed_ = nullptr;
  cuda::PinnedBuffer prime_pinned_;          // channels x history_frames_
  float* d_prime_in_ = nullptr;              // channels x history_frames_
  float* d_prime_out_ = nullptr;             // bands x channels x max_frames
  std::vector<float> scratch_;               // CPU priming output: bands x channels x max_frames
  std::vector<float> fade_;                  // the old filter's output during a crossfade
  CudaTwin twin_;  // the fault injection, deferred errors and hand-over
  bool timing_ = false;  // record GPU time (not during warm-up and priming)
  // Raw input (accept_raw_input).
  bool raw_ = false;
  SampleFormat raw_format_ = SampleFormat::kInt16;
  float raw_scale_ = 1.0f;
  uint32_t raw_frame_channels_ = 0;  // the samples of a captured frame (> channels_: a split's part)
  std::vector<std::byte> raw_window_;  // the host conversion of a part's window: its samples gathered
  void* d_raw_[2] = {nullptr, nullptr};                  // per slot: the chunk as captured (own channels)
  unsigned long long* d_counts_[2] = {nullptr, nullptr};  // per slot: clipped, non-finite per channel
  cuda::PinnedBuffer h_counts_;                           // the same, back on the host (2 slots)
  std::vector<ConvertCounts> host_counts_;
  uint64_t last_clipped_ = 0, last_non_finite_ = 0;
};

}  // namespace vigil
