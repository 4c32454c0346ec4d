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
#include "../support/udp.hpp"

namespace vigil {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kVigild = std::string(VIGIL_BIN_DIR) + "/vigild";
const std::string kListen = std::string(VIGIL_BIN_DIR) + "/vigil-listen";

// Runs vigild on `config_body` (outputs appended) until its source ends, with vigil-listen
// --json receiving; returns the event objects vigil-listen printed.
std::vector<json> run_rig(const std::string& name, const std::string& config_body) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const uint16_t event_port = test::free_udp_port();
  const fs::path config = dir / "rig.yaml";
  std::ofstream(config) << config_body << "outputs:\n  - kind: events\n    destination: 127.0.0.1:" << event_port
                        << "\n    status_interval_s: 10\n";
  const std::string out = (dir / "listen.jsonl").string();
  test::Process listen({kListen, "--data-port", "0", "--event-port", std::to_string(event_port), "--json",
                        "--seconds", "60"},
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
  }
  fs::remove_all(dir);
  return events;
}

constexpr double kAeRate = 1e6;
// The planted bursts: channel, onset (s). Same amplitude, carrier, rise and decay everywhere.
const std::vector<std::pair<uint32_t, double>> kBursts = {{0, 0.10}, {0, 0.35}, {0, 0.62}, {2, 0.20}, {2, 0.5004}};
constexpr double kAmp = 0.05, kFreq = 50e3, kRise = 40e-6, kDecay = 100e-6;

double burst(double k) {  // the synthetic source's burst model at k samples after the onset
  const double rise = kRise * kAeRate;
  const double env = k < rise ? k / rise : std::exp(-(k - rise) / (kDecay * kAeRate));
  return kAmp * env * std::sin(2 * std::numbers::pi * kFreq * k / kAeRate);
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
    - {noise_rms: 0.0002, bursts: {amplitude: 0.05, freq_hz: 50000, rise_s: 0.00004, decay_s: 0.0001, times_s: [0.20, 0.5004]}}
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
  const std::vector<json> events = run_rig("vigil-ae-rig", config);
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
  const std::vector<json> events = run_rig("vigil-vib-rig", config);
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
