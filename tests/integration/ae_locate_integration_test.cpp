// AE source location through the real vigild (issue 52): a recording with emissions planted at
// random places on a 1 m square plate (4 sensors) and along a 2 m pipe (2 sensors), each reaching
// every sensor after distance / velocity, read by the file source, hits found by an ae_hits stage,
// located by an ae_locate stage, `ae_event`s received on loopback and compared with the places.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "../support/vigild_run.hpp"

namespace vigil {
namespace {

using nlohmann::json;

constexpr double kRate = 2e6;       // samples/s a channel
constexpr double kVelocity = 3000;  // m/s, a plate wave in steel
constexpr double kSpacing = 20e-3;  // s between planted emissions: each its own event
constexpr double kNoiseRms = 0.005; // 40 dB below the burst's 0.5 V

struct Sensor {
  double x, y;
};
struct Planted {
  double x, y;
};

// The recording: noise on every channel, and per planted source a decaying 150 kHz burst that
// starts at its peak at the sample nearest the source's arrival at each sensor (so the hit's
// arrival is that sample: its first sample is 100 noise RMS above the threshold).
std::string write_recording(const test::TempDir& dir, const std::string& name, const std::vector<Sensor>& sensors,
                            const std::vector<Planted>& sources, uint32_t seed) {
  const size_t channels = sensors.size();
  const size_t frames = size_t((double(sources.size()) + 1) * kSpacing * kRate);
  std::vector<float> x(frames * channels);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, float(kNoiseRms));
  for (float& v : x) v = noise(rng);
  for (size_t s = 0; s < sources.size(); ++s) {
    const double t0 = (double(s) + 0.5) * kSpacing;
    for (size_t c = 0; c < channels; ++c) {
      const double d = std::hypot(sources[s].x - sensors[c].x, sources[s].y - sensors[c].y);
      const size_t k = size_t(std::llround((t0 + d / kVelocity) * kRate));
      for (size_t t = 0; t < 2000 && k + t < frames; ++t)
        x[(k + t) * channels + c] += float(0.5 * std::exp(-double(t) / 400) * std::cos(2 * M_PI * 150e3 * double(t) / kRate));
    }
  }
  const std::string base = dir.file(name);
  std::ofstream(base + ".sigmf-meta") << R"({"global": {"core:datatype": "rf32_le", "core:sample_rate": )" << kRate
                                      << R"(, "core:num_channels": )" << channels
                                      << R"(, "core:version": "1.0.0"}, "captures": [{"core:sample_start": 0}]})";
  std::ofstream(base + ".sigmf-data", std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), std::streamsize(x.size() * sizeof(float)));
  return base + ".sigmf-meta";
}

// vigild on the recording (unpaced: the source waits for the pipeline, so nothing is dropped on a
// slow or loaded machine); its ae_events in order, and its final status.
void locate(const test::TempDir& dir, const std::string& recording, const std::string& geometry,
            std::vector<json>& events, json& final_status) {
  test::UdpSocket data, ev;
  std::ostringstream c;
  c << "source: {kind: file, path: " << recording << ", chunk_frames: 4096, rate_factor: 0}\n"
    << test::room_for_stalls()
    << "stages:\n"
       "  - {name: hits, kind: ae_hits, input: input, threshold_db: 100, full_scale_v: 1, preamp_gain_db: 0,"
       " hdt_us: 200, hlt_us: 1000, level_interval_s: 0}\n"
       "  - name: where\n    kind: ae_locate\n    input: hits\n    geometry:\n"
    << geometry << "outputs:\n  - {kind: events, destination: \"127.0.0.1:" << ev.port << "\"}\n";
  test::VigildRun run(data, ev, dir.write("vigil.yaml", c.str()), dir.file("vigild.log"));
  const int status = run.wait_exit(std::chrono::seconds(60));
  ASSERT_NE(status, -1) << run.log;
  ASSERT_EQ(WEXITSTATUS(status), 0) << run.log;
  for (const json& e : run.received.events) {
    if (e.value("type", "") == "ae_event") events.push_back(e);
    if (e.value("type", "") == "status" && e.value("final", false)) final_status = e;
  }
  ASSERT_FALSE(final_status.is_null()) << run.log;
  EXPECT_EQ(final_status["dropped_frames"], 0);
  EXPECT_EQ(final_status["events_dropped"], 0);
}

// Inside the plate every emission is one event within 1 % of the sensor spacing (10 mm), checked
// here against the bound the sampling allows: each planted arrival is rounded to the nearest of
// 2 MS/s, 0.25 us at most, so a difference of two is off by 0.5 us, 1.5 mm of path at 3000 m/s;
// Geiger's solution inside a square of four sensors multiplies that at most about threefold
// (dsp/ae_location's Monte-Carlo: spread 2.2 mm from 1 us of timing noise, ~0.74 mm a us of
// path): 4.5 mm. Outside, each is flagged outside or not located, never placed inside.
TEST(AeLocateThroughVigild, EveryEmissionOnThePlateIsOneEventWhereItWasPlanted) {
  test::TempDir dir("ae-plate");
  const std::vector<Sensor> sensors = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> inside(0.1, 0.9);
  std::vector<Planted> sources;
  for (int i = 0; i < 16; ++i) sources.push_back({inside(rng), inside(rng)});
  const std::vector<Planted> outside = {{1.6, 0.4}, {-0.7, 0.3}, {0.5, 1.8}, {2.0, 2.0}};
  sources.insert(sources.end(), outside.begin(), outside.end());
  const std::string geometry =
      "      kind: planar\n      velocity_m_s: 3000\n"
      "      sensors: [{x_m: 0, y_m: 0}, {x_m: 1, y_m: 0}, {x_m: 1, y_m: 1}, {x_m: 0, y_m: 1}]\n"
      "      event_lockout_s: 0.001\n      cluster_cell_m: 0.05\n";
  std::vector<json> events;
  json fin;
  locate(dir, write_recording(dir, "plate", sensors, sources, uint32_t(rng())), geometry, events, fin);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ASSERT_EQ(events.size(), sources.size());
  double worst = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const json& e = events[i];
    const Planted& p = sources[i];
    const std::string what = "source " + std::to_string(i) + " at (" + std::to_string(p.x) + ", " +
                             std::to_string(p.y) + "): " + e.dump();
    // The event's time is its first hit's: the planted emission's time plus the nearest sensor's path.
    double nearest = 1e9;
    for (const Sensor& s : sensors) nearest = std::min(nearest, std::hypot(p.x - s.x, p.y - s.y));
    const double t0 = (double(i) + 0.5) * kSpacing;
    EXPECT_EQ(e["frame"].get<uint64_t>(), uint64_t(std::llround((t0 + nearest / kVelocity) * kRate))) << what;
    EXPECT_EQ(e["stage"], "where");
    EXPECT_EQ(e["hits"], 4) << what;
    EXPECT_EQ(e["channels"].size(), 4u) << what;
    if (i < 16) {
      ASSERT_TRUE(e["located"].get<bool>()) << what;
      EXPECT_TRUE(e["inside"].get<bool>()) << what;
      const double err = std::hypot(e["x_m"].get<double>() - p.x, e["y_m"].get<double>() - p.y);
      worst = std::max(worst, err);
      EXPECT_LE(err, 4.5e-3) << what;
      EXPECT_LE(e["residual_m"].get<double>(), 3e-3) << what;  // arrivals off by 1.5 mm of path at most
      EXPECT_TRUE(e.contains("cluster")) << what;
    } else if (e["located"].get<bool>()) {
      EXPECT_FALSE(e["inside"].get<bool>()) << what;
    } else {
      EXPECT_FALSE(e.value("why_not", "").empty()) << what;
    }
  }
  std::printf("16 emissions inside the plate: the worst located %.2f mm from where it was planted\n", worst * 1e3);
  const json& st = fin["stages"]["where"];
  EXPECT_EQ(st["hits"], 4 * sources.size());
  EXPECT_EQ(st["events"], sources.size());
  EXPECT_EQ(st["late_hits"], 0);
  EXPECT_EQ(st["repeated_channel_hits"], 0);
  EXPECT_EQ(fin["events_by_type"]["ae_event"], sources.size());
}

// Along a pipe the source lies between the first-hit sensor and the other, s = (s_a + s_b) / 2 +
// v (t_a - t_b) / 2: half the 0.5 us of rounding, 0.75 mm at 3000 m/s. Within 1 % of the 2 m
// spacing (20 mm), checked against that bound.
TEST(AeLocateThroughVigild, EveryEmissionAlongAPipeIsLocatedBetweenItsSensors) {
  test::TempDir dir("ae-pipe");
  const std::vector<Sensor> sensors = {{0, 0}, {2, 0}};
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> along(0.05, 1.95);
  std::vector<Planted> sources;
  for (int i = 0; i < 10; ++i) sources.push_back({along(rng), 0});
  const std::string geometry =
      "      kind: linear\n      velocity_m_s: 3000\n      sensors: [{x_m: 0, y_m: 0}, {x_m: 2, y_m: 0}]\n";
  std::vector<json> events;
  json fin;
  locate(dir, write_recording(dir, "pipe", sensors, sources, uint32_t(rng())), geometry, events, fin);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ASSERT_EQ(events.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const json& e = events[i];
    ASSERT_TRUE(e["located"].get<bool>()) << e.dump();
    EXPECT_EQ(e["location"], "linear");
    EXPECT_TRUE(e["inside"].get<bool>()) << e.dump();
    EXPECT_NEAR(e["x_m"].get<double>(), sources[i].x, 0.75e-3 + 1e-9) << e.dump();
    if (std::abs(sources[i].x - 1) > 1e-3) {  // (within a sample's path of the middle, either may be first)
      EXPECT_EQ(e["first_channel"], sources[i].x < 1 ? 0 : 1) << e.dump();
    }
  }
}

}  // namespace
}  // namespace vigil
