// End to end with the real binaries: vigild on a synthetic AE rig (bursts planted at known times
// and channels) and on a vibration rig (sines of known velocity), vigil-listen --json on loopback.
// Every planted burst arrives as exactly one ae_hit with its arrival frame and amplitude; the
// vibration events carry the right velocity and ISO zone, and the one alarm the levels call for.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <thread>

#include "../support/process.hpp"
#include "../support/ports.hpp"
#include "core/rfc3339.hpp"
#include "acquisition/synthetic_source.hpp"
#include "dsp/sample_convert.hpp"

namespace vigil {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kVigild = std::string(VIGIL_BIN_DIR) + "/vigild";
const std::string kListen = std::string(VIGIL_BIN_DIR) + "/vigil-listen";

// Runs vigild on `config_body` (the events output appended; `data_outputs` may name
// "DATA_PORT") until its source ends, with vigil-listen --json receiving and recording data
// into dir/rec; returns the event objects vigil-listen printed.
std::vector<json> run_rig(const fs::path& dir, const std::string& config_body, const std::string& data_outputs = "") {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const uint16_t event_port = test::free_udp_port(), data_port = test::free_udp_port();
  std::string outputs = data_outputs;
  for (size_t at; (at = outputs.find("DATA_PORT")) != std::string::npos;) outputs.replace(at, 9, std::to_string(data_port));
  const fs::path config = dir / "rig.yaml";
  std::ofstream(config) << config_body << "outputs:\n  - kind: events\n    destination: 127.0.0.1:" << event_port
                        << "\n    status_interval_s: 10\n" << outputs;
  const std::string out = (dir / "listen.jsonl").string();
  test::Process listen({kListen, "--data-port", std::to_string(data_port), "--event-port", std::to_string(event_port),
                        "--json", "--record", (dir / "rec").string(), "--seconds", "60"},
                       out);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it bind
  test::Process vigild({kVigild, "--config", config.string(), "--log-interval", "0"});
  const int vstatus = vigild.wait(std::chrono::seconds(30));
  EXPECT_NE(vstatus, -1);
  EXPECT_EQ(WEXITSTATUS(vstatus), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  listen.signal(SIGINT);
  EXPECT_NE(listen.wait(std::chrono::seconds(5)), -1);
  std::vector<json> events;
  std::ifstream lines(out);
  std::string line;
  json summary;
  while (std::getline(lines, line)) {
    const json j = json::parse(line);
    if (j["kind"] == "event") events.push_back(j["event"]);
    if (j["kind"] == "summary") summary = j;
  }
  EXPECT_FALSE(summary.is_null());
  if (!summary.is_null()) {
    EXPECT_EQ(summary["event_gaps"], 0);
    EXPECT_EQ(summary["malformed"], 0);
    for (const json& st : summary["streams"]) EXPECT_EQ(st["gaps"], 0);
  }
  return events;
}

constexpr double kAeRate = 1e6;
// The planted bursts: channel, onset (s). Same amplitude, carrier, rise and decay everywhere.
// 0.3277 s is 20 frames after a chunk boundary (16384 x 20): its pretrigger comes from the chunk
// before; 0.65506 s is 300 frames before one: its waveform runs into the next chunk.
const std::vector<std::pair<uint32_t, double>> kBursts = {{0, 0.10},   {0, 0.35},   {0, 0.62},
                                                          {2, 0.20},   {2, 0.3277}, {2, 0.5004}, {2, 0.65506}};
constexpr double kAmp = 0.05, kFreq = 50e3, kRise = 40e-6, kDecay = 100e-6;

double burst(double k) {  // the synthetic source's burst model at k samples after the onset
  const double rise = kRise * kAeRate;
  const double env = k < rise ? k / rise : std::exp(-(k - rise) / (kDecay * kAeRate));
  return kAmp * env * std::sin(2 * std::numbers::pi * kFreq * k / kAeRate);
}

// Hundreds of hits a chunk: the output thread hands them to the kernel in batches (sendmmsg, up to
// 64 a call); every one arrives, in order (consecutive seq), and as many as the status counts.
TEST(DetectionIntegration, HundredsOfHitsAChunkArriveEveryOneInOrder) {
  const std::string config = R"(source:
  kind: synthetic
  rate_hz: 1000000
  channels: 8
  format: int16
  chunk_frames: 65536
  seed: 5
  rate_factor: 2
  duration_s: 1.0
  signals:
    - {noise_rms: 0.0002, bursts: {amplitude: 0.05, freq_hz: 50000, rise_s: 0.00002, decay_s: 0.00005, rate_hz: 1500}}
pipeline: {pool_chunks: 16}
stages:
  - name: hits
    kind: ae_hits
    input: input
    threshold_db: 45
    hdt_us: 100
    pdt_us: 20
    hlt_us: 50
    full_scale_v: 10
    preamp_gain_db: 40
)";
  const fs::path dir = fs::temp_directory_path() / ("vigil-ae-many-" + std::to_string(getpid()));
  const std::vector<json> events = run_rig(dir, config);
  fs::remove_all(dir);
  size_t hits = 0;
  json final_status;
  for (size_t k = 0; k < events.size(); ++k) {
    if (events[k]["type"] == "ae_hit") ++hits;
    if (events[k]["type"] == "status" && events[k]["final"] == true) final_status = events[k];
    if (k > 0) {
      ASSERT_EQ(events[k]["seq"].get<uint64_t>(), events[k - 1]["seq"].get<uint64_t>() + 1) << "event " << k;
    }
  }
  ASSERT_FALSE(final_status.is_null());
  EXPECT_GT(hits, 16 * 64u) << "too few hits a chunk to fill several batches";
  EXPECT_EQ(hits, final_status["events_by_type"]["ae_hit"].get<size_t>());
  EXPECT_EQ(final_status["send_errors"], 0);
  EXPECT_EQ(final_status["events_dropped"], 0);
  // Every event before the final status was sent (the status counts itself after it is sent).
  EXPECT_EQ(final_status["events_sent"].get<size_t>() + 1, events.size());
}

TEST(DetectionIntegration, AeRigReportsExactlyThePlantedHits) {
  std::string config = R"(source:
  kind: synthetic
  rate_hz: 1000000
  channels: 4
  format: int16
  chunk_frames: 16384
  seed: 3
  rate_factor: 4
  duration_s: 1.0
  signals:
    - {noise_rms: 0.0002, bursts: {amplitude: 0.05, freq_hz: 50000, rise_s: 0.00004, decay_s: 0.0001, times_s: [0.10, 0.35, 0.62]}}
    - {noise_rms: 0.0002}
    - {noise_rms: 0.0002, bursts: {amplitude: 0.05, freq_hz: 50000, rise_s: 0.00004, decay_s: 0.0001, times_s: [0.20, 0.3277, 0.5004, 0.65506]}}
    - {noise_rms: 0.0002}
pipeline: {pool_chunks: 16}
stages:
  - name: hits
    kind: ae_hits
    input: input
    threshold_db: 45
    full_scale_v: 10
    preamp_gain_db: 40
    level_interval_s: 0.25
)";
  const fs::path dir = fs::temp_directory_path() / ("vigil-ae-rig-" + std::to_string(getpid()));
  config += "    waveform: {pretrigger_us: 100, length_us: 1000}\n";
  const std::vector<json> events = run_rig(dir, config, "  - kind: vita49\n    stream: hits\n    destination: 127.0.0.1:DATA_PORT\n");
  std::vector<json> hits;
  std::map<uint32_t, int> levels;
  for (const json& e : events) {
    if (e["type"] == "ae_hit") hits.push_back(e);
    if (e["type"] == "ae_level") ++levels[e["channel"].get<uint32_t>()];
  }
  ASSERT_EQ(hits.size(), kBursts.size());
  std::sort(hits.begin(), hits.end(), [](const json& a, const json& b) {
    return std::make_pair(a["channel"].get<uint32_t>(), a["frame"].get<uint64_t>()) <
           std::make_pair(b["channel"].get<uint32_t>(), b["frame"].get<uint64_t>());
  });
  // Threshold 45 dB_AE = 177.8 uV at the sensor = 1.778e-3 full scale (0.1 V per unit).
  const double thr = 1e-6 * std::pow(10.0, 45.0 / 20) / 0.1;
  for (size_t i = 0; i < kBursts.size(); ++i) {
    SCOPED_TRACE(i);
    const uint64_t onset = uint64_t(std::llround(kBursts[i].second * kAeRate));
    uint64_t arrival = 0;
    double peak = 0;
    for (uint64_t k = 0; k < 2000; ++k) {
      const double v = std::fabs(burst(double(k)));
      if (arrival == 0 && v >= thr) arrival = onset + k;
      peak = std::max(peak, v);
    }
    EXPECT_EQ(hits[i]["channel"], kBursts[i].first);
    EXPECT_LE(std::llabs(int64_t(hits[i]["frame"].get<uint64_t>()) - int64_t(arrival)), 1);
    EXPECT_NEAR(hits[i]["amplitude_db"].get<double>(), 20 * std::log10(peak * 0.1 / 1e-6), 0.1);
    EXPECT_NEAR(hits[i]["threshold_db"].get<double>(), 45.0, 0.01);
    EXPECT_GT(hits[i]["counts"].get<int>(), 5);
    EXPECT_GT(hits[i]["energy_eu"].get<double>(), 0.0);
    EXPECT_TRUE(hits[i]["sample_time"].get<std::string>().ends_with("Z"));
  }
  for (uint32_t c = 0; c < 4; ++c) EXPECT_EQ(levels[c], 4) << c;  // 1 s in 0.25 s intervals

  // Each hit's waveform, on its channel's hit stream (data output 0, band 0): the input samples from
  // 100 us before the arrival, 1000 samples in all, exactly as vigild converted them.
  SyntheticSpec spec;
  spec.rate_hz = kAeRate;
  spec.channels = 4;
  spec.chunk_frames = 16384;
  spec.seed = 3;
  spec.rate_factor = 0;
  spec.duration_s = 1.0;
  spec.signals.resize(4);
  for (ChannelSignal& sig : spec.signals) sig.noise_rms = 0.0002;
  spec.signals[0].bursts = {kAmp, kFreq, kRise, kDecay, 0, {0.10, 0.35, 0.62}};
  spec.signals[2].bursts = {kAmp, kFreq, kRise, kDecay, 0, {0.20, 0.3277, 0.5004, 0.65506}};
  SyntheticSource src(spec);
  std::vector<std::vector<float>> input(4);
  std::vector<std::byte> mem(16384 * 4 * 2);
  Chunk chunk;
  chunk.data = mem.data();
  chunk.capacity_bytes = mem.size();
  std::vector<float> planar(4 * 16384);
  while (src.read(chunk) == ReadStatus::kOk) {
    convert_to_planar(chunk.data, SampleFormat::kInt16, chunk.header.frames, 4, 1.0f / 32768, planar.data(), 16384, nullptr);
    for (uint32_t c = 0; c < 4; ++c)
      input[c].insert(input[c].end(), planar.begin() + c * 16384, planar.begin() + c * 16384 + chunk.header.frames);
  }
  for (const uint32_t c : {0u, 2u}) {
    SCOPED_TRACE(c);
    const fs::path rec = dir / "rec" / ("stream-0000000" + std::to_string(c) + ".f32");
    ASSERT_TRUE(fs::exists(rec)) << [&] {
      std::string names;
      for (const auto& e : fs::directory_iterator(dir / "rec")) names += e.path().filename().string() + " ";
      return names;
    }();
    std::vector<float> samples(fs::file_size(rec) / sizeof(float));
    std::ifstream f(rec, std::ios::binary);
    f.read(reinterpret_cast<char*>(samples.data()), std::streamsize(samples.size() * sizeof(float)));
    size_t k = 0;
    for (const json& h : hits) {
      if (h["channel"] != c) continue;
      const uint64_t start = h["frame"].get<uint64_t>() - 100;
      ASSERT_LE((k + 1) * 1000, samples.size());
      for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(samples[k * 1000 + i], input[c][start + i]) << "hit " << k << " sample " << i;
      ++k;
    }
    EXPECT_EQ(samples.size(), k * 1000);
    const json side = json::parse(std::ifstream(dir / "rec" / ("stream-0000000" + std::to_string(c) + ".json")));
    // The first waveform's first packet carries the time of its first (pretrigger) sample.
    const json& first_hit = *std::find_if(hits.begin(), hits.end(), [&](const json& h) { return h["channel"] == c; });
    int64_t arrival_ns = 0, first_ns = 0;
    ASSERT_TRUE(parse_rfc3339_utc(first_hit["sample_time"].get<std::string>(), arrival_ns));
    ASSERT_TRUE(parse_rfc3339_utc(side["first_timestamp"].get<std::string>(), first_ns));
    EXPECT_NEAR(double(first_ns - arrival_ns), -100'000.0, 2.0);
  }
  fs::remove_all(dir);
}

TEST(DetectionIntegration, VibrationRigGradesVelocityAndRaisesTheAlarm) {
  // 80 Hz acceleration sines of 3.5 mm/s (zone C) and 1.0 mm/s (zone A) velocity RMS, as
  // fractions of a 10 V full scale through a 100 mV/g accelerometer.
  auto amplitude = [](double v_mm_s) {
    return v_mm_s * 1e-3 * std::sqrt(2.0) * 2 * std::numbers::pi * 80 * (0.1 / 9.80665) / 10.0;
  };
  const std::string config = R"(source:
  kind: synthetic
  rate_hz: 25600
  channels: 2
  format: int16
  chunk_frames: 1024
  seed: 5
  rate_factor: 10
  duration_s: 3.0
  signals:
    - {sines: [{freq_hz: 80, amplitude: )" + std::to_string(amplitude(3.5)) + R"(}], noise_rms: 0.00001}
    - {sines: [{freq_hz: 80, amplitude: )" + std::to_string(amplitude(1.0)) + R"(}], noise_rms: 0.00001}
stages:
  - name: vib
    kind: vibration
    input: input
    window_s: 1.0
    hop_s: 0.5
    full_scale_v: 10
    sensitivity_mv_per_g: 100
    velocity: true
    iso_20816: {group: 2, foundation: rigid}
    rules:
      - {name: velocity, metric: velocity_rms, alert: 2.8, danger: 4.5}
)";
  const fs::path dir = fs::temp_directory_path() / ("vigil-vib-rig-" + std::to_string(getpid()));
  const std::vector<json> events = run_rig(dir, config);
  fs::remove_all(dir);
  std::map<uint32_t, std::vector<json>> metrics;
  std::vector<json> alarms;
  for (const json& e : events) {
    if (e["type"] == "vibration") metrics[e["channel"].get<uint32_t>()].push_back(e);
    if (e["type"] == "alarm") alarms.push_back(e);
  }
  const double want_v[2] = {3.5, 1.0};
  const char* want_zone[2] = {"C", "A"};
  for (uint32_t c = 0; c < 2; ++c) {
    SCOPED_TRACE(c);
    ASSERT_EQ(metrics[c].size(), 5u);  // windows ending at 1.0, 1.5, 2.0, 2.5, 3.0 s
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(metrics[c][k]["frame"], 25599 + 12800 * k);
      EXPECT_NEAR(metrics[c][k]["velocity_rms"].get<double>(), want_v[c], 0.01 * want_v[c]);
      EXPECT_EQ(metrics[c][k]["iso_zone"], want_zone[c]);
      EXPECT_EQ(metrics[c][k]["units"], "m/s^2");
    }
  }
  ASSERT_EQ(alarms.size(), 1u);
  EXPECT_EQ(alarms[0]["state"], "raised");
  EXPECT_EQ(alarms[0]["rule"], "velocity");
  EXPECT_EQ(alarms[0]["level"], "alert");
  EXPECT_EQ(alarms[0]["channel"], 0);
  EXPECT_EQ(alarms[0]["frame"], 25599);
  EXPECT_EQ(alarms[0]["threshold"], 2.8);
  EXPECT_NEAR(alarms[0]["value"].get<double>(), 3.5, 0.035);
}

}  // namespace
}  // namespace vigil
