// A graph of CUDA stages spares the host copies: the chunk is converted straight into the first
// stage's staged input, each CUDA stage's staged output is its stream, and the next CUDA stage
// reads that in place. The outputs are bit-identical to the same stages run on their own (every
// copy made), in copy and mapped memory, across a reload (which primes a new filter through the
// staged input, before the next chunk is converted into it). Skipped where no GPU answers.
// With the look-ahead (the pipeline's: while the GPU runs chunk k, chunk k + 1 is converted into
// the FIR's second staged input and its copy started on the copy stream) the outputs and events
// are the same to the bit.
#include "pipeline/graph.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../support/ae_lanes.hpp"
#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/stage_run.hpp"
#include "core/spsc_queue.hpp"
#include "cuda/pinned_buffer.hpp"
#include "dsp/sample_convert.hpp"
#include "stages/channel_split_stage.hpp"
#include "stages/denoise_cuda_stage.hpp"
#include "stages/event_record.hpp"
#include "stages/fir_bank_cuda_stage.hpp"
#include "stages/moments_cuda_stage.hpp"

namespace vigil {
namespace {

constexpr double kRate = 1e6;
constexpr uint32_t kChannels = 3, kMaxFrames = 4096, kChunks = 12, kReloadAt = 5;

FirBankSettings fir(double low_hz) {
  FirBankSettings s;
  s.taps = 255;
  s.bands = {{"ae", FilterType::kBandpass, low_hz, 300e3}};
  return s;
}

DenoiseStageSettings denoise() {
  DenoiseStageSettings d;
  d.window = 1024;
  return d;
}

std::vector<StageSettings> stages(double low_hz) {
  return {{"band", "fir_bank", "input", false, fir(low_hz)}, {"den", "wavelet_denoise", "band", false, denoise()}};
}

// Chunk k of x (kChannels lanes of `total` frames) into an input block, as the conversion would.
void fill(Block& in, const std::vector<float>& x, uint32_t total, uint32_t k) {
  in.frames = kMaxFrames;
  for (uint32_t c = 0; c < kChannels; ++c)
    std::copy_n(&x[size_t(c) * total + size_t(k) * kMaxFrames], kMaxFrames, in.data + c * in.stride);
}

// The pipeline's look-ahead (PipelineWorker): while the GPU runs a chunk, the next one goes into
// the graph's other input slot and its upload starts; none is taken for the chunk a reload
// applies to (skip_at). With `raw` (raw input: kChannels interleaved int16 per frame) the chunk
// goes up as it is, else it is filled from x.
struct LookAhead {
  Graph* graph = nullptr;
  const std::vector<float>* x = nullptr;
  const int16_t* raw = nullptr;
  uint32_t total = 0, next = 0, skip_at = ~0u;
  bool taken = false;
  uint32_t uploads = 0;  // upload_next_input() said true
  static void on_gpu_wait(void* self) {
    LookAhead& a = *static_cast<LookAhead*>(self);
    if (a.taken || a.next >= kChunks || a.next == a.skip_at) return;
    Block& next = a.graph->next_input_block();
    if (a.raw) {
      next.frames = kMaxFrames;
      a.uploads += a.graph->upload_next_input(a.raw + size_t(a.next) * kMaxFrames * kChannels);
    } else {
      fill(next, *a.x, a.total, a.next);
      a.uploads += a.graph->upload_next_input();
    }
    a.taken = true;
  }
};

// Chunk k of x through the graph, as the pipeline feeds it: converted into the input block (after
// any reload), then run; with a look-ahead, taken from it when it was converted ahead.
StageStatus run_chunk(Graph& graph, const std::vector<float>& x, uint32_t total, uint32_t k,
                      SpscQueue<EventRecord>& events, std::atomic<uint64_t>& dropped, LookAhead* ahead = nullptr) {
  Exec exec;
  if (ahead && ahead->taken) {
    graph.advance_input();
    ahead->taken = false;
  } else {
    fill(graph.input_block(), x, total, k);
  }
  if (ahead) ahead->next = k + 1;
  exec.chunk.first_frame = uint64_t(k) * kMaxFrames;
  exec.events = &events;
  exec.events_dropped = &dropped;
  return graph.run(exec, [&] {  // at each wait for a stage's GPU work
    if (ahead) LookAhead::on_gpu_wait(ahead);
  });
}

// resident: pipeline.gpu_resident (the denoiser reads the FIR's bands on the device in copy mode).
// look_ahead: the chunks fed as the pipeline's look-ahead does.
void run_graph_vs_stages(bool mapped, bool resident = false, bool look_ahead = false) {
  const std::vector<float> x = test::randn(size_t(kChannels) * kMaxFrames * kChunks, 17);
  const uint32_t total = kMaxFrames * kChunks;
  // The graph: conversion stand-in writes each chunk into the input block, after any reload.
  Graph graph(stages(50e3), GraphBackend{true, mapped, 0, false, 1, resident, true, false, false, {}});
  graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames);
  ASSERT_EQ(graph.stream_count(), 3u);
  EXPECT_EQ(graph.input_block().data, gpu_part(graph.stage(0))->input_buffer()) << "the chunk is not converted into the staging";
  ASSERT_TRUE(graph.look_ahead()) << "the FIR stage offers no second staged input";
  EXPECT_EQ(graph.next_input_block().data, gpu_part(graph.stage(0))->input_slot(1));
  LookAhead ahead;
  ahead.graph = &graph;
  ahead.x = &x;
  ahead.total = total;
  ahead.skip_at = kReloadAt;
  EXPECT_EQ(graph.stream(1).block.data, gpu_part(graph.stage(0))->output_buffer());
  EXPECT_EQ(graph.stream(2).block.data, gpu_part(graph.stage(1))->output_buffer());
  std::string why;
  const std::unique_ptr<Graph::Update> update = graph.plan_update(stages(50e3), stages(80e3), why);
  ASSERT_TRUE(update) << why;
  SpscQueue<EventRecord> events(1024);
  std::atomic<uint64_t> dropped{0};
  std::vector<float> band(size_t(kChannels) * total), den(size_t(kChannels) * total);
  for (uint32_t k = 0; k < kChunks; ++k) {
    if (k == kReloadAt) graph.apply_update(*update);
    ASSERT_EQ(run_chunk(graph, x, total, k, events, dropped, look_ahead ? &ahead : nullptr), StageStatus::kOk);
    for (uint32_t c = 0; c < kChannels; ++c) {
      std::copy_n(graph.stream(1).block.data + c * kMaxFrames, kMaxFrames, &band[size_t(c) * total + size_t(k) * kMaxFrames]);
      std::copy_n(graph.stream(2).block.data + c * kMaxFrames, kMaxFrames, &den[size_t(c) * total + size_t(k) * kMaxFrames]);
    }
  }
  EventRecord ev;
  while (events.pop(ev)) EXPECT_NE(ev.kind, EventKind::kBackendFallback) << "a stage fell back to the CPU";
  if (look_ahead) {
    // Every chunk after the first was taken ahead but the reload's; in copy mode each of them
    // went up on the copy stream and its work took that copy (in mapped mode there is none).
    EXPECT_EQ(ahead.uploads, kChunks - 2);
    nlohmann::json status;
    graph.stage(0).add_status(status);
    EXPECT_EQ(status["uploaded_ahead_chunks"], mapped ? 0u : kChunks - 2) << status.dump();
    EXPECT_GT(status["graph_chunks"].get<uint64_t>(), 0u) << status.dump();
    // The graphs record their own GPU-time events: the time is there (a chunk's filters take
    // microseconds) and sane.
    EXPECT_GT(status["gpu_us"]["p50"].get<double>(), 0.0) << status.dump();
    EXPECT_LT(status["gpu_us"]["max"].get<double>(), 1e6) << status.dump();
  }
  // The same stages on their own, fed through their own buffers (the copying path).
  FirBankCudaStage fir_alone(fir(50e3), 0, CudaStageOptions{mapped, 0});
  fir_alone.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames);
  StageSettings next = stages(80e3)[0];
  const test::StageRun fir_run = test::run_stage(fir_alone, {kChannels, 1, 1, kMaxFrames}, x, total, {kMaxFrames},
                                                 [&](uint64_t chunk) {
                                                   if (chunk != kReloadAt) return;
                                                   StageUpdatePlan plan = fir_alone.plan_update(next);
                                                   ASSERT_TRUE(plan.update);
                                                   fir_alone.apply_update(*plan.update);
                                                 });
  DenoiseCudaStage den_alone(denoise(), 1, CudaStageOptions{mapped, 0});
  den_alone.prepare({kRate, kChannels, 1, {"ae"}, 255}, kMaxFrames);
  const test::StageRun den_run = test::run_stage(den_alone, {kChannels, 1, 1, kMaxFrames}, fir_run.out, total, {kMaxFrames});
  for (size_t i = 0; i < band.size(); ++i) ASSERT_EQ(band[i], fir_run.out[i]) << "band sample " << i;
  for (size_t i = 0; i < den.size(); ++i) ASSERT_EQ(den[i], den_run.out[i]) << "den sample " << i;
}

TEST(GraphCuda, CudaStagesShareTheirStagingAndGiveTheSameOutputCopyMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  run_graph_vs_stages(false);
}

TEST(GraphCuda, CudaStagesShareTheirStagingAndGiveTheSameOutputMappedMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  run_graph_vs_stages(true);
}

TEST(GraphCuda, ResidentCudaStagesReadEachOthersDeviceOutputAndGiveTheSameOutput) {
  VIGIL_SKIP_WITHOUT_GPU();
  run_graph_vs_stages(false, true);
}

TEST(GraphCuda, TheLookAheadGivesTheSameOutputCopyMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  run_graph_vs_stages(false, false, true);
}

TEST(GraphCuda, TheLookAheadGivesTheSameOutputMappedMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  run_graph_vs_stages(true, false, true);
}

TEST(GraphCuda, TheLookAheadGivesTheSameOutputResident) {
  VIGIL_SKIP_WITHOUT_GPU();
  run_graph_vs_stages(false, true, true);
}

// FIR -> denoise -> AE hits, all on the GPU (pipeline.gpu_resident), with nothing sent (the events only): the hits read
// the denoised lanes on the device and the denoiser the FIR's bands, and neither comes back (both
// streams are kept on the device; the denoiser's history of its input comes from there). The
// events equal those of the same graph with every stream kept on the host. With a launch failure
// at chunk 5 every stage hands over to its CPU twin and the chunks go on.
std::vector<StageSettings> s1_like() {
  std::vector<StageSettings> s = stages(50e3);
  AeHitSettings hits;
  hits.preamp_gain_db = 20;
  hits.level_interval_s = 0.002;
  s.push_back({"hits", "ae_hits", "den", false, hits});
  return s;
}

// devices: pipeline.gpus (two or more: every stage split by channels over them).
std::vector<EventRecord> run_s1_like(const std::vector<std::string>* host_streams, uint64_t fail_at, bool* on_device,
                                     bool look_ahead = false, std::vector<int> devices = {}) {
  const uint32_t total = kMaxFrames * kChunks;
  const std::vector<float> x = test::ae_lanes(kRate, kChannels, total, 23, 23);  // bursts in noise
  Graph graph(s1_like(), GraphBackend{true, false, fail_at, false, 1, true, true, false, false, std::move(devices)});
  graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames, host_streams);
  *on_device = graph.stream(2).on_device_only;
  // The denoiser keeps its history from the device: the bands stay there as its output does.
  EXPECT_EQ(graph.stream(1).on_device_only, graph.stream(2).on_device_only);
  SpscQueue<EventRecord> events(1 << 16);
  std::atomic<uint64_t> dropped{0};
  std::vector<EventRecord> got;
  LookAhead ahead;
  ahead.graph = &graph;
  ahead.x = &x;
  ahead.total = total;
  for (uint32_t k = 0; k < kChunks; ++k) {
    EXPECT_EQ(run_chunk(graph, x, total, k, events, dropped, look_ahead ? &ahead : nullptr), StageStatus::kOk);
    EventRecord ev;
    while (events.pop(ev)) got.push_back(ev);
  }
  EXPECT_EQ(dropped.load(), 0u);
  nlohmann::json status;
  graph.stage(2).add_status(status);
  EXPECT_EQ(status["backend"], fail_at ? "cpu (fallback)" : "cuda");
  if (!fail_at) {
    EXPECT_EQ(status["device_input_chunks"], kChunks) << "the hits did not read the denoiser's device output";
  }
  return got;
}

// Raw input: int16 chunks (interleaved, as captured, with full-scale samples among them) handed to
// the graph as they are (Exec::raw_input) and converted on the GPU, with the look-ahead's uploads
// when `ahead`, a reload at kReloadAt and optionally a launch failure: the bands and the denoised
// lanes equal, bit for bit, those of the same graph fed the chunks converted on the host, and the
// clipped counts equal the host conversion's.
struct RawRun {
  std::vector<float> band, den;
  std::vector<uint64_t> clipped;  // per chunk
  bool raw = false;
  uint64_t uploaded_ahead = 0;
  uint64_t parts = 0;                 // parts uploaded while "captured"
  uint64_t completed_from_parts = 0;  // chunks whose rest upload_next_input() took
  uint64_t converted_in_graph = 0;    // chunks copied up and converted inside the FIR's graph
};

// The pipeline's uploads in parts (PipelineWorker with pipeline.upload_in_parts): while chunk k
// runs, each GPU wait sends the next part of chunk k + 1 (kParts parts of unequal sizes, as its
// capture completes them) into the next staged input; chunk k + 1 then copies only the rest
// (upload_next_input with frames_up) and runs from that input. None for the reload's chunk.
struct PartsAhead {
  static constexpr uint32_t kParts = 3;
  static constexpr uint32_t kEnds[kParts] = {1000, 2500, 3584};  // the last 512 frames come with the chunk
  Graph* graph = nullptr;
  const int16_t* raw = nullptr;
  uint32_t next = 0, skip_at = ~0u, sent = 0, frames_up = 0, uploads = 0;
  static void on_gpu_wait(void* self) {
    PartsAhead& a = *static_cast<PartsAhead*>(self);
    if (a.next >= kChunks || a.next == a.skip_at || a.sent == kParts) return;
    const int16_t* chunk = a.raw + size_t(a.next) * kMaxFrames * kChannels;
    const uint32_t end = kEnds[a.sent++];
    if (a.graph->upload_next_input_part(chunk, a.frames_up, end - a.frames_up)) {
      a.frames_up = end;
      ++a.uploads;
    }
  }
};

// The chunks lie in page-locked memory, as the CUDA backend's chunk pool is, unless `pageable`.
// devices: pipeline.gpus (two or more: both stages split by channels over them).
RawRun run_raw(bool raw, bool ahead, uint64_t fail_at, bool in_parts = false, bool pageable = false,
               std::vector<int> devices = {}) {
  const uint32_t total = kMaxFrames * kChunks;
  constexpr float kScale = 1.0f / 32768;
  std::vector<int16_t> plain(pageable ? size_t(total) * kChannels : 0);
  cuda::PinnedBuffer locked;
  if (!pageable) locked = cuda::PinnedBuffer(size_t(total) * kChannels * sizeof(int16_t), false);
  const std::span<int16_t> x(pageable ? plain.data() : locked.host<int16_t>(), size_t(total) * kChannels);
  std::mt19937 rng(31);
  std::normal_distribution<float> n(0.0f, 12000.0f);  // 2.7 sigma to full scale: about 0.7 % clip
  for (int16_t& v : x) v = int16_t(std::clamp(n(rng), -32768.0f, 32767.0f));  // a few clip at full scale
  const std::vector<std::string> nothing_sent;
  Graph graph(stages(50e3), GraphBackend{true, false, fail_at, false, 1, false, true, false, false, std::move(devices)});
  graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames, &nothing_sent);
  RawRun r;
  r.raw = raw && graph.take_raw_input(SampleFormat::kInt16, kScale);
  std::string why;
  const std::unique_ptr<Graph::Update> update = graph.plan_update(stages(50e3), stages(80e3), why);
  EXPECT_TRUE(update) << why;
  SpscQueue<EventRecord> events(1024);
  std::atomic<uint64_t> dropped{0};
  auto chunk = [&](uint32_t k) { return x.data() + size_t(k) * kMaxFrames * kChannels; };
  LookAhead look;
  look.graph = &graph;
  look.raw = x.data();
  look.skip_at = kReloadAt;
  PartsAhead parts;
  parts.graph = &graph;
  parts.raw = x.data();
  parts.skip_at = kReloadAt;
  r.band.resize(size_t(kChannels) * total);
  r.den.resize(size_t(kChannels) * total);
  std::vector<ConvertCounts> counts(kChannels);
  for (uint32_t k = 0; k < kChunks; ++k) {
    if (k == kReloadAt) graph.apply_update(*update);
    if (look.taken) {
      graph.advance_input();
      look.taken = false;
    } else if (parts.frames_up > 0) {  // the rest of it, then it runs from the next input
      graph.next_input_block().frames = kMaxFrames;
      r.completed_from_parts += graph.upload_next_input(chunk(k), parts.frames_up);
      graph.advance_input();
    } else {
      graph.input_block().frames = kMaxFrames;
    }
    parts.sent = parts.frames_up = 0;
    Exec exec;
    uint64_t clipped = 0, non_finite = 0;
    if (r.raw) {
      exec.raw_input = chunk(k);
    } else {  // the host's conversion, as the pipeline makes it
      std::fill(counts.begin(), counts.end(), ConvertCounts{});
      Block& in = graph.input_block();
      convert_to_planar(chunk(k), SampleFormat::kInt16, kMaxFrames, kChannels, kScale, in.data, in.stride, counts.data());
      for (const ConvertCounts& c : counts) clipped += c.clipped;
    }
    void (*on_wait)(void*) = nullptr;  // at each wait for a stage's GPU work
    void* wait_arg = nullptr;
    if (r.raw && ahead) {
      look.next = k + 1;
      on_wait = &LookAhead::on_gpu_wait;
      wait_arg = &look;
    } else if (r.raw && in_parts) {
      parts.next = k + 1;
      on_wait = &PartsAhead::on_gpu_wait;
      wait_arg = &parts;
    }
    exec.chunk.first_frame = uint64_t(k) * kMaxFrames;
    exec.events = &events;
    exec.events_dropped = &dropped;
    EXPECT_EQ(graph.run(exec, [&] {
                if (on_wait) on_wait(wait_arg);
              }),
              StageStatus::kOk);
    if (r.raw) graph.input_counts(clipped, non_finite);
    EXPECT_EQ(non_finite, 0u);
    r.clipped.push_back(clipped);
    for (uint32_t c = 0; c < kChannels; ++c) {
      std::copy_n(graph.stream(1).block.data + c * kMaxFrames, kMaxFrames, &r.band[size_t(c) * total + size_t(k) * kMaxFrames]);
      std::copy_n(graph.stream(2).block.data + c * kMaxFrames, kMaxFrames, &r.den[size_t(c) * total + size_t(k) * kMaxFrames]);
    }
  }
  nlohmann::json status;
  graph.stage(0).add_status(status);
  EXPECT_EQ(status["input_converted_on_gpu"], r.raw) << status.dump();
  r.uploaded_ahead = status["uploaded_ahead_chunks"].get<uint64_t>();
  r.parts = status["parts_uploaded_while_captured"].get<uint64_t>();
  r.converted_in_graph = status["converted_in_graph_chunks"].get<uint64_t>();
  EXPECT_EQ(r.parts, parts.uploads);
  return r;
}

void expect_same_raw_run(const RawRun& got, const RawRun& want) {
  ASSERT_EQ(got.clipped, want.clipped);
  for (size_t i = 0; i < want.band.size(); ++i) ASSERT_EQ(got.band[i], want.band[i]) << "band sample " << i;
  for (size_t i = 0; i < want.den.size(); ++i) ASSERT_EQ(got.den[i], want.den[i]) << "den sample " << i;
}

TEST(GraphCuda, TheInputTakenRawIsConvertedOnTheGpuWithTheSameOutput) {
  VIGIL_SKIP_WITHOUT_GPU();
  const RawRun host = run_raw(false, false, 0);
  uint64_t clipped = 0;
  for (uint64_t c : host.clipped) clipped += c;
  EXPECT_GT(clipped, 0u) << "no full-scale sample: the counts are not exercised";
  const RawRun gpu = run_raw(true, false, 0);
  ASSERT_TRUE(gpu.raw) << "the graph did not take its input raw";
  expect_same_raw_run(gpu, host);
  // Every chunk but the reload's (converted on the host for the crossfade) was converted from
  // page-locked memory and filtered in one replay of the FIR's converting graph.
  EXPECT_EQ(gpu.converted_in_graph, kChunks - 1);
  // From plain (pageable) memory, which a kernel cannot read: each chunk goes up by its own copy.
  const RawRun pageable = run_raw(true, false, 0, false, true);
  expect_same_raw_run(pageable, host);
  EXPECT_EQ(pageable.converted_in_graph, 0u);
  const RawRun gpu_ahead = run_raw(true, true, 0);
  expect_same_raw_run(gpu_ahead, host);
  EXPECT_EQ(gpu_ahead.uploaded_ahead, kChunks - 2) << "every chunk after the first but the reload's went up ahead";
}

// Uploads in parts: each chunk's first frames go up in parts of unequal sizes while the chunk
// before runs (a part a GPU wait), the rest with the chunk; the bands, the denoised lanes and the clipped counts
// equal the host conversion's to the bit. The chunk after the last part-uploaded one and the
// reload's own chunk copy all of themselves.
TEST(GraphCuda, AChunkUploadedInPartsWhileCapturedGivesTheSameOutput) {
  VIGIL_SKIP_WITHOUT_GPU();
  const RawRun host = run_raw(false, false, 0);
  const RawRun parts = run_raw(true, false, 0, true);
  ASSERT_TRUE(parts.raw);
  expect_same_raw_run(parts, host);
  // Chunks 1..11 but the reload's (5) came in parts (one a GPU wait of the chunk before: two
  // stages, so two of the three), each finished and taken ahead.
  EXPECT_EQ(parts.parts, 2u * (kChunks - 2));
  EXPECT_EQ(parts.completed_from_parts, kChunks - 2);
  EXPECT_EQ(parts.uploaded_ahead, kChunks - 2);
}

// Raw input only where the FIR stage is the input's one reader: not when an output sends the
// input, when every stream is kept on the host, when another stage reads the input too, or in
// mapped memory (there the kernels read the converted input in place).
TEST(GraphCuda, TheInputIsTakenRawOnlyWhereNothingElseReadsIt) {
  VIGIL_SKIP_WITHOUT_GPU();
  const StreamFormat in{kRate, kChannels, 1, {""}, 0};
  auto raw = [&](const std::vector<StageSettings>& st, bool mapped, const std::vector<std::string>* sent) {
    Graph graph(st, GraphBackend{true, mapped, 0, false, 1, false, true, false, false, {}});
    graph.prepare(in, kMaxFrames, sent);
    return graph.take_raw_input(SampleFormat::kInt16, 1.0f / 32768);
  };
  const std::vector<std::string> nothing, input_sent{"input"}, band_sent{"band"};
  EXPECT_TRUE(raw(stages(50e3), false, &nothing));
  EXPECT_TRUE(raw(stages(50e3), false, &band_sent));
  EXPECT_FALSE(raw(stages(50e3), false, &input_sent));
  EXPECT_FALSE(raw(stages(50e3), false, nullptr));
  EXPECT_FALSE(raw(stages(50e3), true, &nothing));
  std::vector<StageSettings> two_readers = stages(50e3);
  two_readers.push_back({"den_in", "wavelet_denoise", "input", false, denoise()});
  EXPECT_FALSE(raw(two_readers, false, &nothing));
}

// A launch failure on the eighth chunk (which went up and was converted ahead while the seventh
// ran): the FIR's CPU twin takes that chunk and the later ones converted on the host, and every
// output is the same as with host conversion.
TEST(GraphCuda, ALaunchFailureWithRawInputConvertsTheChunkOnTheHostForTheCpuTwin) {
  VIGIL_SKIP_WITHOUT_GPU();
  const RawRun host = run_raw(false, false, 8);
  const RawRun gpu = run_raw(true, true, 8);
  ASSERT_TRUE(gpu.raw);
  expect_same_raw_run(gpu, host);
}

// The same without the look-ahead: chunks 0-6 but the reload's (5) went through the FIR's converting
// graph, which also wrote the input history (by kernel, on a branch of the graph); the CPU twins
// primed from it give the same output to the bit.
TEST(GraphCuda, ALaunchFailureAfterConvertingGraphsPrimesTheCpuTwinFromTheirHistory) {
  VIGIL_SKIP_WITHOUT_GPU();
  const RawRun host = run_raw(false, false, 8);
  const RawRun gpu = run_raw(true, false, 8);
  ASSERT_TRUE(gpu.raw);
  EXPECT_EQ(gpu.converted_in_graph, 6u);  // the eighth chunk (k = 7) fails
  expect_same_raw_run(gpu, host);
}

// Split by channels over pipeline.gpus [0, 0] (parts of 2 and 1 channels on one device): the bank
// takes its raw input part by part (each part copies up its window of every frame and converts
// it), with the look-ahead's uploads, in parts while captured, or neither; the denoiser's parts
// read the bank's parts' outputs in place. Every band and denoised sample and the clipped counts
// equal the unsplit graph's fed host-converted chunks, to the bit.
TEST(GraphCuda, ASplitGraphTakesItsRawInputPartByPartWithTheSameOutput) {
  VIGIL_SKIP_WITHOUT_GPU();
  const RawRun host = run_raw(false, false, 0);
  const std::vector<int> two{0, 0};
  const RawRun plain = run_raw(true, false, 0, false, false, two);
  ASSERT_TRUE(plain.raw) << "the split bank did not take its input raw";
  expect_same_raw_run(plain, host);
  EXPECT_EQ(plain.converted_in_graph, 0u) << "a part's window cannot go through the converting graph";
  const RawRun ahead = run_raw(true, true, 0, false, false, two);
  expect_same_raw_run(ahead, host);
  EXPECT_EQ(ahead.uploaded_ahead, kChunks - 2) << "every chunk after the first but the reload's went up ahead";
  const RawRun parts = run_raw(true, false, 0, true, false, two);
  expect_same_raw_run(parts, host);
  EXPECT_EQ(parts.parts, 2u * (kChunks - 2));
  EXPECT_EQ(parts.completed_from_parts, kChunks - 2);
}

// A launch failure at the eighth chunk in every part, which went up raw while the seventh ran:
// each part's CPU twin converts its window of the chunk on the host. The outputs are the unsplit
// graph's across the same failure (its CPU twins', to float rounding: a part's twin filters fewer
// lanes) and the clipped counts the same.
TEST(GraphCuda, ALaunchFailureInASplitGraphWithRawInputConvertsEachPartsWindowOnTheHost) {
  VIGIL_SKIP_WITHOUT_GPU();
  const RawRun host = run_raw(false, false, 8);
  const RawRun split = run_raw(true, true, 8, false, false, {0, 0});
  ASSERT_TRUE(split.raw);
  ASSERT_EQ(split.clipped, host.clipped);
  for (const auto& [got, want] : {std::pair{&split.band, &host.band}, std::pair{&split.den, &host.den}}) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < want->size(); ++i) {
      err += double((*got)[i] - (*want)[i]) * ((*got)[i] - (*want)[i]);
      ref += double((*want)[i]) * (*want)[i];
    }
    EXPECT_GT(ref, 0.0);
    EXPECT_LE(std::sqrt(err / ref), 1e-6) << "relative L2 error";
  }
}

// The same events, bit for bit (the same computation on the same data).
void expect_same_events(const std::vector<EventRecord>& got, const std::vector<EventRecord>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].kind, want[i].kind) << i;
    ASSERT_EQ(got[i].channel, want[i].channel) << i;
    ASSERT_EQ(got[i].frame, want[i].frame) << i;
    EXPECT_EQ(got[i].hit.peak, want[i].hit.peak) << i;
    EXPECT_EQ(got[i].hit.sum_sq, want[i].hit.sum_sq) << i;
    EXPECT_EQ(got[i].ae_level.sum_sq, want[i].ae_level.sum_sq) << i;
  }
}

TEST(GraphCuda, HitsReadTheDenoisedLanesOnTheDeviceWhenNothingElseNeedsThem) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::vector<std::string> nothing_sent;
  bool kept = false, kept_all = true;
  const std::vector<EventRecord> all_host = run_s1_like(nullptr, 0, &kept_all);
  const std::vector<EventRecord> resident = run_s1_like(&nothing_sent, 0, &kept);
  EXPECT_FALSE(kept_all);
  EXPECT_TRUE(kept) << "the denoised stream was not kept on the device";
  size_t hits = 0;
  for (const EventRecord& e : all_host) hits += e.kind == EventKind::kAeHit;
  EXPECT_GT(hits, 20u);
  expect_same_events(resident, all_host);
  bool kept_ahead = false;
  const std::vector<EventRecord> ahead = run_s1_like(&nothing_sent, 0, &kept_ahead, true);
  EXPECT_TRUE(kept_ahead);
  expect_same_events(ahead, all_host);
}

// The resident chain split over [0, 0]: the denoiser's parts read the bank's parts' bands on the
// device and the hits' parts the denoiser's, nothing gathered on the host (both streams kept on the
// parts' devices); the events are the unsplit graph's, in the same order, with and without the
// look-ahead.
TEST(GraphCuda, ASplitResidentChainKeepsEachPartOnItsDeviceWithTheSameEvents) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::vector<std::string> nothing_sent;
  bool kept_whole = false, kept = false, kept_ahead = false;
  const std::vector<EventRecord> whole = run_s1_like(&nothing_sent, 0, &kept_whole);
  const std::vector<EventRecord> split = run_s1_like(&nothing_sent, 0, &kept, false, {0, 0});
  EXPECT_TRUE(kept) << "the split denoiser's stream was not kept on its parts' devices";
  size_t hits = 0;
  for (const EventRecord& e : whole) hits += e.kind == EventKind::kAeHit;
  EXPECT_GT(hits, 20u);
  expect_same_events(split, whole);
  const std::vector<EventRecord> ahead = run_s1_like(&nothing_sent, 0, &kept_ahead, true, {0, 0});
  EXPECT_TRUE(kept_ahead);
  expect_same_events(ahead, whole);
}

// pipeline.gpu_keep_warm with both stages split over [0, 0]: the parts' device is kept warm, once
// (both parts are on it), and rounds are queued while the graph waits; none without the key. A
// split node is no CUDA stage to the graph, and its devices were left cold before.
TEST(GraphCuda, KeepingTheGpuWarmCoversTheDevicesOfASplitsParts) {
  VIGIL_SKIP_WITHOUT_GPU();
  for (const bool keep : {false, true}) {
    Graph graph(stages(50e3), GraphBackend{true, false, 0, false, 1, false, true, false, keep, {0, 0}});
    graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames, nullptr);
    ASSERT_NE(dynamic_cast<const ChannelSplitStage*>(&graph.stage(0)), nullptr) << "the bank was not split";
    const Graph::KeepWarmCounts before = graph.keep_warm_counts();
    EXPECT_EQ(before.on, keep);
    EXPECT_EQ(before.devices, keep ? 1u : 0u);
    for (int i = 0; i < 20; ++i) {
      graph.keep_gpu_warm();
      std::this_thread::sleep_for(std::chrono::microseconds(700));  // past the 0.5 ms interval
    }
    const Graph::KeepWarmCounts after = graph.keep_warm_counts();
    if (keep) {
      EXPECT_GE(after.rounds, 10u) << "one round a ping, unless the one before still ran";
      EXPECT_EQ(after.errors, 0u);
    } else {
      EXPECT_EQ(after.rounds, 0u);
    }
  }
}

// A launch failure at chunk 5 in every stage of the resident graph: three hand-overs, and hits on
// the later chunks too.
TEST(GraphCuda, ALaunchFailureInEveryResidentStageHandsOverAndHitsGoOn) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::vector<std::string> nothing_sent;
  bool kept_f = false;
  const std::vector<EventRecord> failed = run_s1_like(&nothing_sent, 5, &kept_f);
  size_t fallbacks = 0, late_hits = 0;
  for (const EventRecord& e : failed) {
    fallbacks += e.kind == EventKind::kBackendFallback;
    late_hits += e.kind == EventKind::kAeHit && e.frame >= 6 * kMaxFrames;
  }
  EXPECT_EQ(fallbacks, 3u);
  EXPECT_GT(late_hits, 5u);
  // With the look-ahead (chunk 6 converted and on its way up while chunk 5 fails): the same events.
  const std::vector<EventRecord> failed_ahead = run_s1_like(&nothing_sent, 5, &kept_f, true);
  expect_same_events(failed_ahead, failed);
}

// A band_rms stage after a CUDA FIR bank runs on the GPU exactly where the bands stay there (no
// output sends them, no reader takes them on the host, copy memory), and then reads them on the
// device; elsewhere it runs on the CPU. Its alarms are the CPU stage's either way, also across a
// launch failure at chunk 5 in both stages.
struct RmsRun {
  std::vector<EventRecord> events;
  bool on_gpu = false, bands_on_device = false;
  uint64_t device_input_chunks = 0;
};

RmsRun run_band_rms(const std::vector<std::string>* host_streams, bool mapped = false, uint64_t fail_at = 0,
                    const std::string& rms_input = "band") {
  const uint32_t total = kMaxFrames * kChunks;
  // Noise whose level steps every two chunks (0.3 / 1.5, later on the higher channels): the band's
  // RMS crosses the alarm's threshold and its clear threshold again and again.
  std::vector<float> x = test::randn(size_t(kChannels) * total, 41);
  for (uint32_t c = 0; c < kChannels; ++c)
    for (uint32_t i = 0; i < total; ++i) x[size_t(c) * total + i] *= ((i + c * 3000) / (2 * kMaxFrames)) % 2 ? 1.5f : 0.3f;
  BandRmsSettings rms;
  rms.window_s = 0.001;  // 1000 frames: 4 or 5 runs a chunk
  rms.threshold = 0.5;
  rms.clear_threshold = 0.4;
  std::vector<StageSettings> s = {{"band", "fir_bank", "input", false, fir(50e3)},
                                  {"alarm", "band_rms", rms_input, false, rms}};
  Graph graph(s, GraphBackend{true, mapped, fail_at, false, 1, true, true, false, false, {}});
  graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames, host_streams);
  RmsRun r;
  r.bands_on_device = graph.stream(1).on_device_only;
  const auto* gpu = dynamic_cast<const BandRmsCudaStage*>(&graph.stage(1));
  r.on_gpu = gpu != nullptr;
  SpscQueue<EventRecord> events(1 << 14);
  std::atomic<uint64_t> dropped{0};
  for (uint32_t k = 0; k < kChunks; ++k) {
    EXPECT_EQ(run_chunk(graph, x, total, k, events, dropped), StageStatus::kOk);
    EventRecord ev;
    while (events.pop(ev)) r.events.push_back(ev);
  }
  EXPECT_EQ(dropped.load(), 0u);
  if (gpu) r.device_input_chunks = gpu->device_input_chunks();
  return r;
}

// The alarms of got (less its fallback events) against want's, the RMS values within `tolerance`
// relative.
void expect_same_alarms(const std::vector<EventRecord>& got_all, const std::vector<EventRecord>& want,
                        double tolerance = 1e-9) {
  std::vector<EventRecord> got;
  for (const EventRecord& e : got_all)
    if (e.kind != EventKind::kBackendFallback) got.push_back(e);
  size_t raised = 0;
  for (const EventRecord& e : want) raised += e.kind == EventKind::kAlarmRaised;
  EXPECT_GE(raised, kChannels * 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].kind, want[i].kind) << i;
    ASSERT_EQ(got[i].channel, want[i].channel) << i;
    ASSERT_EQ(got[i].frame, want[i].frame) << i;
    EXPECT_NEAR(got[i].value, want[i].value, tolerance * want[i].value) << i;  // sums in another order
  }
}

TEST(GraphCuda, BandRmsRunsOnTheGpuOnlyWhereItsBandsStayThere) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::vector<std::string> nothing_sent, bands_sent = {"band"};
  const RmsRun host = run_band_rms(nullptr);  // every stream kept on the host
  EXPECT_FALSE(host.on_gpu);
  const RmsRun resident = run_band_rms(&nothing_sent);
  EXPECT_TRUE(resident.on_gpu);
  EXPECT_TRUE(resident.bands_on_device);
  EXPECT_EQ(resident.device_input_chunks, kChunks) << "band_rms did not read the bands on the device";
  expect_same_alarms(resident.events, host.events);
  const RmsRun sent = run_band_rms(&bands_sent);
  EXPECT_FALSE(sent.on_gpu) << "the bands come back for the output anyway";
  EXPECT_FALSE(sent.bands_on_device);
  expect_same_alarms(sent.events, host.events);
  const RmsRun mapped = run_band_rms(&nothing_sent, true);
  EXPECT_FALSE(mapped.on_gpu) << "mapped: the FIR's bands are in host memory";
  expect_same_alarms(mapped.events, host.events);
  const RmsRun on_input = run_band_rms(&nothing_sent, false, 0, "input");
  EXPECT_FALSE(on_input.on_gpu) << "the input stream has no CUDA stage before it";
}

TEST(GraphCuda, ALaunchFailureInTheFirAndTheGpuBandRmsLosesNoAlarm) {
  VIGIL_SKIP_WITHOUT_GPU();
  const std::vector<std::string> nothing_sent;
  const RmsRun host = run_band_rms(nullptr);
  const RmsRun failed = run_band_rms(&nothing_sent, false, 5);
  EXPECT_TRUE(failed.on_gpu);
  size_t fallbacks = 0;
  for (const EventRecord& e : failed.events) fallbacks += e.kind == EventKind::kBackendFallback;
  EXPECT_EQ(fallbacks, 2u) << "the FIR bank and band_rms each hand over once";
  EXPECT_EQ(failed.device_input_chunks, 4u) << "on the device up to the failing 5th chunk";
  // From chunk 5 on the bands are the CPU twin's (float rounding apart: 1e-5, the FIR twins' bound).
  expect_same_alarms(failed.events, host.events, 1e-5);
}

}  // namespace
}  // namespace vigil
