// The vibration and band_rms stages on the GPU (pipeline/moments_cuda_stage) against the CPU
// stages: the same events in the same order (metrics and RMS values within 1e-9 relative, since
// only the order of the double additions differs; the same alarm transitions), in copy and mapped
// memory, chunks of 1 to 8192 frames; chunks cut into more runs than the kernel takes summed by the
// twin; a launch failure handed over to the CPU twin with nothing lost, also when a CUDA FIR bank
// before it kept its bands on the device; chunks read in place (mapped, or the bank's device
// output) replayed as graphs, with the events of launch by launch. Skipped where no GPU answers.
#include "stages/moments_cuda_stage.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/gpu.hpp"
#include "../support/signals.hpp"
#include "../support/stage_run.hpp"
#include "../support/tolerances.hpp"
#include "core/spsc_queue.hpp"
#include "config/settings.hpp"
#include "stages/fir_bank_cuda_stage.hpp"

namespace vigil {
namespace {

constexpr double kRate = 25600;
constexpr uint32_t kBands = 2, kChannels = 5, kLanes = kBands * kChannels, kTotal = 5 * 25600, kMaxChunk = 8192;

// Windows of `window_s` every `hop_s`, alarms on RMS and kurtosis that the signal below crosses.
VibrationStageSettings settings(double window_s = 0.2, double hop_s = 0.1) {
  VibrationStageSettings s;
  s.analysis.window_s = window_s;
  s.analysis.hop_s = hop_s;
  VibrationRuleSettings rms{"level", VibrationMetric::kRms, {}};
  rms.levels.alert = 0.6;
  rms.levels.danger = 1.2;
  VibrationRuleSettings kurt{"impacts", VibrationMetric::kKurtosis, {}};
  kurt.levels.alert = 4;
  s.rules = {rms, kurt};
  return s;
}

// Noise whose level each lane ramps up and down over the run (RMS from ~0.3 to ~1.5: both RMS
// levels raised and cleared), a DC offset per lane, and bursts of impacts on the odd lanes.
std::vector<float> signal() {
  std::vector<float> x = test::randn(size_t(kLanes) * kTotal, 77);
  for (uint32_t l = 0; l < kLanes; ++l)
    for (uint32_t i = 0; i < kTotal; ++i) {
      const double t = double(i) / kTotal;
      const double level = 0.3 + 1.2 * std::sin(3.14159 * t * (1 + l % 3)) * std::sin(3.14159 * t * (1 + l % 3));
      float& v = x[size_t(l) * kTotal + i];
      v = float(0.05 * l + level * v);
      if (l % 2 && (i / 2560) % 4 == 1 && i % 97 == 0) v += 9.0f;  // impacts: kurtosis up in some windows
    }
  return x;
}

test::StageRun run(Stage& stage, const std::vector<uint32_t>& sizes) {
  stage.prepare({kRate, kChannels, kBands, {"a", "b"}, 0}, kMaxChunk);
  return test::run_stage(stage, {kChannels, kBands, 0, kMaxChunk}, signal(), kTotal, sizes);
}

size_t fallbacks(const std::vector<EventRecord>& events) {
  size_t n = 0;
  for (const EventRecord& e : events) n += e.kind == EventKind::kBackendFallback;
  return n;
}

bool near(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(got - want) <= test::kMergedMomentsRel * std::max(1.0, std::fabs(want));
}

// got (less its fallback events) against want, event by event.
void expect_same_events(const std::vector<EventRecord>& got_all, const std::vector<EventRecord>& want) {
  std::vector<EventRecord> got;
  for (const EventRecord& e : got_all)
    if (e.kind != EventKind::kBackendFallback) got.push_back(e);
  size_t vibration = 0, raised = 0, cleared = 0;
  for (const EventRecord& e : want) {
    vibration += e.kind == EventKind::kVibration;
    raised += e.kind == EventKind::kAlarmRaised;
    cleared += e.kind == EventKind::kAlarmCleared;
  }
  // A lane's window every hop, less those overtaken within one chunk (a chunk longer than the hop
  // completes two: the stage analyses the newer): 400 and 340 here.
  EXPECT_GE(vibration, 300u);
  EXPECT_GT(raised, 10u);
  EXPECT_GT(cleared, 5u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const EventRecord &g = got[i], &w = want[i];
    SCOPED_TRACE("event " + std::to_string(i) + " lane " + std::to_string(w.band) + "/" + std::to_string(w.channel) +
                 " frame " + std::to_string(w.frame));
    ASSERT_EQ(g.kind, w.kind);
    ASSERT_EQ(g.band, w.band);
    ASSERT_EQ(g.channel, w.channel);
    ASSERT_EQ(g.frame, w.frame);
    EXPECT_EQ(g.stage, w.stage);
    if (w.kind == EventKind::kVibration) {
      for (size_t m = 0; m < kVibrationMetricCount; ++m)
        EXPECT_TRUE(near(g.vibration.value[m], w.vibration.value[m]))
            << "metric " << m << ": " << g.vibration.value[m] << " vs " << w.vibration.value[m];
    } else {
      EXPECT_EQ(g.rule, w.rule);
      EXPECT_EQ(g.level, w.level);
      EXPECT_EQ(g.from_level, w.from_level);
      EXPECT_TRUE(near(g.value, w.value)) << g.value << " vs " << w.value;
    }
  }
}

const std::vector<uint32_t> kSizes = {1024, 4096, 3000, 7, 2560, 1};

void same_events_as_the_cpu_stage(bool mapped, bool graphs = true) {
  VibrationStage cpu(settings(), 3);
  const test::StageRun want = run(cpu, kSizes);
  VibrationCudaStage gpu(settings(), 3, CudaStageOptions{mapped, 0, graphs, graphs});
  const test::StageRun got = run(gpu, kSizes);
  expect_same_events(got.events, want.events);
  EXPECT_EQ(fallbacks(got.events), 0u);
  EXPECT_FALSE(gpu.on_cpu());
  nlohmann::json status;
  gpu.add_status(status);
  EXPECT_EQ(status["backend"], "cuda");
  EXPECT_EQ(status["memory"], mapped ? "mapped" : "copy");
  EXPECT_EQ(status["chunks_summed_on_cpu"], 0);
  // Mapped staging is read in place: every chunk (cut into 1 to 3 runs) a graph's replay. A copy
  // in goes launch by launch.
  EXPECT_EQ(gpu.graph_chunks(), mapped && graphs ? got.chunks : 0u);
}

TEST(VibrationCudaStage, SameEventsAsTheCpuStageCopyMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_events_as_the_cpu_stage(false);
}

TEST(VibrationCudaStage, SameEventsAsTheCpuStageMappedMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_events_as_the_cpu_stage(true);
}

TEST(VibrationCudaStage, SameEventsLaunchByLaunchWithoutGraphs) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_events_as_the_cpu_stage(true, false);
}

TEST(VibrationCudaStage, AChunkOfMoreRunsThanTheKernelTakesIsSummedByTheTwin) {
  VIGIL_SKIP_WITHOUT_GPU();
  // Windows of 1024 samples every 64: segments of 64, so an 8192-frame chunk has 128 runs (the
  // kernel takes 64) and a 1024-frame one 16.
  const VibrationStageSettings s = settings(0.04, 0.0025);
  const std::vector<uint32_t> sizes = {1024, 8192, 1000, 8192, 24};
  VibrationStage cpu(s, 3);
  const test::StageRun want = run(cpu, sizes);
  VibrationCudaStage gpu(s, 3, CudaStageOptions{false, 0});
  const test::StageRun got = run(gpu, sizes);
  expect_same_events(got.events, want.events);
  nlohmann::json status;
  gpu.add_status(status);
  EXPECT_EQ(status["backend"], "cuda");
  EXPECT_GT(status["chunks_summed_on_cpu"].get<uint64_t>(), 5u);  // the 8192-frame chunks
}

TEST(VibrationCudaStage, ALaunchFailureHandsOverToTheCpuTwinWithNothingLost) {
  VIGIL_SKIP_WITHOUT_GPU();
  VibrationStage cpu(settings(), 3);
  const test::StageRun want = run(cpu, kSizes);
  VibrationCudaStage gpu(settings(), 3, CudaStageOptions{false, 6});  // the 6th chunk
  const test::StageRun got = run(gpu, kSizes);
  expect_same_events(got.events, want.events);
  EXPECT_EQ(fallbacks(got.events), 1u);
  EXPECT_TRUE(gpu.on_cpu());
  nlohmann::json status;
  gpu.add_status(status);
  EXPECT_EQ(status["backend"], "cpu (fallback)");
  EXPECT_EQ(status["cuda_errors"], 1);
}

// A CUDA FIR bank -> vibration on the GPU, run by hand as the graph runs them (the vibration stage
// reads the bank's output block, its page-locked staging, and binds it as its producer).
std::vector<EventRecord> run_pair(bool keep_on_device, uint64_t vib_fail_at, uint64_t* device_input_chunks,
                                  bool vib_graphs = true, uint64_t* graph_chunks = nullptr) {
  FirBankSettings fs;
  fs.taps = 127;
  fs.bands = {{"low", FilterType::kLowpass, 3000, 0}, {"high", FilterType::kHighpass, 3000, 0}};
  FirBankCudaStage fir(fs, 1, CudaStageOptions{false, 0});
  VibrationCudaStage vib(settings(), 2, CudaStageOptions{false, vib_fail_at, vib_graphs, vib_graphs});
  fir.keep_output_on_device(keep_on_device);
  const StreamFormat bands = fir.prepare({kRate, kChannels, 1, {""}, 0}, kMaxChunk);
  vib.bind_input(fir.output_buffer());
  vib.bind_producer(&fir);
  vib.prepare(bands, kMaxChunk);
  const std::vector<float> x = signal();  // its first kChannels lanes are the input
  std::vector<float> in(size_t(kChannels) * kMaxChunk);
  SpscQueue<EventRecord> queue(8192);
  std::atomic<uint64_t> dropped{0};
  std::vector<EventRecord> events;
  uint64_t k = 0;
  for (uint32_t at = 0; at < kTotal; ++k) {
    const uint32_t n = std::min(kSizes[k % kSizes.size()], kTotal - at);
    for (uint32_t l = 0; l < kChannels; ++l)
      std::copy_n(x.data() + size_t(l) * kTotal + at, n, in.data() + size_t(l) * kMaxChunk);
    Block bin{in.data(), kMaxChunk, n, kChannels, 1};
    Block bfir{fir.output_buffer(), kMaxChunk, n, kChannels, kBands};
    Block none{nullptr, 0, 0, kChannels, 0};
    Exec exec;
    exec.chunk.first_frame = at;
    exec.events = &queue;
    exec.events_dropped = &dropped;
    EXPECT_EQ(fir.process(bin, bfir, exec), StageStatus::kOk);
    if (vib.needs_host_input()) {  // as Graph::run: a reader on the host has the bands brought back
      EXPECT_TRUE(fir.make_output_host_valid(n));
    }
    EXPECT_EQ(vib.process(bfir, none, exec), StageStatus::kOk);
    EventRecord ev;
    while (queue.pop(ev)) events.push_back(ev);
    at += n;
  }
  EXPECT_EQ(dropped.load(), 0u);
  *device_input_chunks = vib.device_input_chunks();
  if (graph_chunks) *graph_chunks = vib.graph_chunks();
  return events;
}

TEST(VibrationCudaStage, ReadsAFirBanksBandsOnTheDevice) {
  VIGIL_SKIP_WITHOUT_GPU();
  uint64_t on_device = 0, copied = 0;
  const std::vector<EventRecord> want = run_pair(false, 0, &copied);
  const std::vector<EventRecord> kept = run_pair(true, 0, &on_device);
  EXPECT_GT(on_device, 50u);
  EXPECT_EQ(on_device, copied) << "in copy mode the vibration stage always reads the bank's device output";
  expect_same_events(kept, want);  // the same GPU computation on the same data
  EXPECT_EQ(fallbacks(kept), 0u);
}

// Bands read on the device are summed by a graph's replay, one per count of runs (chunks of 1 to
// 4096 frames, cut at 2560-frame segments: 1 to 3 runs), with the events of launch by launch.
TEST(VibrationCudaStage, BandsOnTheDeviceAreSummedByReplayedGraphs) {
  VIGIL_SKIP_WITHOUT_GPU();
  uint64_t on_device = 0, by_launch = 0, graphs = 0, no_graphs = 0;
  const std::vector<EventRecord> want = run_pair(true, 0, &by_launch, false, &no_graphs);
  const std::vector<EventRecord> got = run_pair(true, 0, &on_device, true, &graphs);
  EXPECT_EQ(no_graphs, 0u);
  EXPECT_GT(on_device, 50u);
  EXPECT_EQ(graphs, on_device) << "every chunk read on the device replays a graph";
  EXPECT_EQ(on_device, by_launch);
  expect_same_events(got, want);
  EXPECT_EQ(fallbacks(got), 0u);
}

TEST(VibrationCudaStage, ALaunchFailureOnBandsKeptOnTheDeviceBringsThemBackWithNothingLost) {
  VIGIL_SKIP_WITHOUT_GPU();
  uint64_t copied = 0, failed = 0;
  const std::vector<EventRecord> want = run_pair(false, 0, &copied);
  const std::vector<EventRecord> fell = run_pair(true, 4, &failed);
  EXPECT_EQ(failed, 3u) << "on the device up to the failing 4th chunk";
  expect_same_events(fell, want);
  EXPECT_EQ(fallbacks(fell), 1u);
}

// band_rms: windows of `window_s`, raised above 0.9 and cleared below 0.7 (the signal's level
// ramps through both).
BandRmsSettings rms_settings(double window_s) {
  BandRmsSettings s;
  s.window_s = window_s;
  s.threshold = 0.9;
  s.clear_threshold = 0.7;
  return s;
}

void expect_same_alarms(const std::vector<EventRecord>& got_all, const std::vector<EventRecord>& want) {
  std::vector<EventRecord> got;
  for (const EventRecord& e : got_all)
    if (e.kind != EventKind::kBackendFallback) got.push_back(e);
  size_t raised = 0;
  for (const EventRecord& e : want) raised += e.kind == EventKind::kAlarmRaised;
  EXPECT_GT(raised, 10u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const EventRecord &g = got[i], &w = want[i];
    SCOPED_TRACE("event " + std::to_string(i) + " lane " + std::to_string(w.band) + "/" + std::to_string(w.channel) +
                 " frame " + std::to_string(w.frame));
    ASSERT_EQ(g.kind, w.kind);
    ASSERT_EQ(g.band, w.band);
    ASSERT_EQ(g.channel, w.channel);
    ASSERT_EQ(g.frame, w.frame);
    EXPECT_EQ(g.t_utc_ns, w.t_utc_ns);
    EXPECT_TRUE(near(g.value, w.value)) << g.value << " vs " << w.value;
    EXPECT_EQ(g.threshold, w.threshold);
  }
}

void same_alarms_as_the_cpu_band_rms(double window_s, bool mapped, uint64_t fail_at, const std::vector<uint32_t>& sizes,
                                     bool some_on_cpu) {
  BandRmsStage cpu(rms_settings(window_s), 4);
  const test::StageRun want = run(cpu, sizes);
  BandRmsCudaStage gpu(rms_settings(window_s), 4, CudaStageOptions{mapped, fail_at, true, true});
  const test::StageRun got = run(gpu, sizes);
  expect_same_alarms(got.events, want.events);
  EXPECT_EQ(fallbacks(got.events), fail_at ? 1u : 0u);
  nlohmann::json status;
  gpu.add_status(status);
  EXPECT_EQ(status["backend"], fail_at ? "cpu (fallback)" : "cuda");
  if (!fail_at) {
    EXPECT_EQ(status["memory"], mapped ? "mapped" : "copy");
  }
  EXPECT_EQ(status["chunks_summed_on_cpu"].get<uint64_t>() > 0, some_on_cpu);
  if (!fail_at) {  // mapped: the chunks the GPU sums, each a graph's replay (1 to 5 runs here)
    EXPECT_EQ(gpu.graph_chunks(), mapped ? got.chunks - status["chunks_summed_on_cpu"].get<uint64_t>() : 0u);
  }
}

TEST(BandRmsCudaStage, SameAlarmsAsTheCpuStageCopyMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_alarms_as_the_cpu_band_rms(0.05, false, 0, kSizes, false);
}

TEST(BandRmsCudaStage, SameAlarmsAsTheCpuStageMappedMode) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_alarms_as_the_cpu_band_rms(0.05, true, 0, kSizes, false);
}

TEST(BandRmsCudaStage, ShortWindowsInLongChunksAreSummedByTheTwin) {
  VIGIL_SKIP_WITHOUT_GPU();
  // 26-sample windows: a 4096-frame chunk has 158 runs (the kernel takes 64), a 1000-frame one 39.
  same_alarms_as_the_cpu_band_rms(0.001, false, 0, {1000, 4096, 7, 1024}, true);
}

TEST(BandRmsCudaStage, ALaunchFailureHandsOverToTheCpuTwinWithNothingLost) {
  VIGIL_SKIP_WITHOUT_GPU();
  same_alarms_as_the_cpu_band_rms(0.05, false, 6, kSizes, false);
}

}  // namespace
}  // namespace vigil
