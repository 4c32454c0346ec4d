// A graph of CUDA stages spares the host copies: the chunk is converted straight into the first
// stage's staged input, each CUDA stage's staged output is its stream, and the next CUDA stage
// reads that in place. The outputs are bit-identical to the same stages run on their own (every
// copy made), in copy and mapped memory, across a reload (which primes a new filter through the
// staged input, before the next chunk is converted into it). Skipped where no GPU answers.
#include "pipeline/graph.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/ae_lanes.hpp"
#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/stage_run.hpp"
#include "acquisition/spsc_queue.hpp"
#include "pipeline/denoise_cuda_stage.hpp"
#include "pipeline/event_record.hpp"
#include "pipeline/fir_bank_cuda_stage.hpp"

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

// Chunk k of x (kChannels lanes of `total` frames) through the graph, as the pipeline feeds it:
// converted into the input block (after any reload), then run.
StageStatus run_chunk(Graph& graph, const std::vector<float>& x, uint32_t total, uint32_t k,
                      SpscQueue<EventRecord>& events, std::atomic<uint64_t>& dropped) {
  Block& in = graph.input_block();
  in.frames = kMaxFrames;
  for (uint32_t c = 0; c < kChannels; ++c)
    std::copy_n(&x[size_t(c) * total + size_t(k) * kMaxFrames], kMaxFrames, in.data + c * in.stride);
  Exec exec;
  exec.chunk.first_frame = uint64_t(k) * kMaxFrames;
  exec.events = &events;
  exec.events_dropped = &dropped;
  return graph.run(exec);
}

// resident: pipeline.gpu_resident (the denoiser reads the FIR's bands on the device in copy mode).
void run_graph_vs_stages(bool mapped, bool resident = false) {
  const std::vector<float> x = test::randn(size_t(kChannels) * kMaxFrames * kChunks, 17);
  const uint32_t total = kMaxFrames * kChunks;
  // The graph: conversion stand-in writes each chunk into the input block, after any reload.
  Graph graph(stages(50e3), GraphBackend{true, mapped, 0, false, 1, resident});
  graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames);
  ASSERT_EQ(graph.stream_count(), 3u);
  EXPECT_EQ(graph.input_block().data, graph.stage(0).input_buffer()) << "the chunk is not converted into the staging";
  EXPECT_EQ(graph.stream(1).block.data, graph.stage(0).output_buffer());
  EXPECT_EQ(graph.stream(2).block.data, graph.stage(1).output_buffer());
  std::string why;
  const std::unique_ptr<Graph::Update> update = graph.plan_update(stages(50e3), stages(80e3), why);
  ASSERT_TRUE(update) << why;
  SpscQueue<EventRecord> events(1024);
  std::atomic<uint64_t> dropped{0};
  std::vector<float> band(size_t(kChannels) * total), den(size_t(kChannels) * total);
  for (uint32_t k = 0; k < kChunks; ++k) {
    if (k == kReloadAt) graph.apply_update(*update);
    ASSERT_EQ(run_chunk(graph, x, total, k, events, dropped), StageStatus::kOk);
    for (uint32_t c = 0; c < kChannels; ++c) {
      std::copy_n(graph.stream(1).block.data + c * kMaxFrames, kMaxFrames, &band[size_t(c) * total + size_t(k) * kMaxFrames]);
      std::copy_n(graph.stream(2).block.data + c * kMaxFrames, kMaxFrames, &den[size_t(c) * total + size_t(k) * kMaxFrames]);
    }
  }
  EventRecord ev;
  while (events.pop(ev)) EXPECT_NE(ev.kind, EventKind::kBackendFallback) << "a stage fell back to the CPU";
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

// FIR -> denoise -> AE hits, all on the GPU (pipeline.gpu_resident), with nothing sent (the events only): the hits read
// the denoised lanes on the device, and the denoiser skips its copy back (its stream is kept on the
// device); the FIR's bands still come back (the denoiser keeps a host history of its input). The
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

std::vector<EventRecord> run_s1_like(const std::vector<std::string>* host_streams, uint64_t fail_at, bool* on_device) {
  const uint32_t total = kMaxFrames * kChunks;
  const std::vector<float> x = test::ae_lanes(kRate, kChannels, total, 23, 23);  // bursts in noise
  Graph graph(s1_like(), GraphBackend{true, false, fail_at, false, 1, true});
  graph.prepare({kRate, kChannels, 1, {""}, 0}, kMaxFrames, host_streams);
  *on_device = graph.stream(2).on_device_only;
  EXPECT_FALSE(graph.stream(1).on_device_only) << "the denoiser reads the bands on the host too";
  SpscQueue<EventRecord> events(1 << 16);
  std::atomic<uint64_t> dropped{0};
  std::vector<EventRecord> got;
  for (uint32_t k = 0; k < kChunks; ++k) {
    EXPECT_EQ(run_chunk(graph, x, total, k, events, dropped), StageStatus::kOk);
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
  ASSERT_EQ(resident.size(), all_host.size());
  for (size_t i = 0; i < all_host.size(); ++i) {  // the same computation on the same data: bit for bit
    ASSERT_EQ(resident[i].kind, all_host[i].kind) << i;
    ASSERT_EQ(resident[i].channel, all_host[i].channel) << i;
    ASSERT_EQ(resident[i].frame, all_host[i].frame) << i;
    EXPECT_EQ(resident[i].hit.peak, all_host[i].hit.peak) << i;
    EXPECT_EQ(resident[i].hit.sum_sq, all_host[i].hit.sum_sq) << i;
    EXPECT_EQ(resident[i].ae_level.sum_sq, all_host[i].ae_level.sum_sq) << i;
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
}

}  // namespace
}  // namespace vigil
