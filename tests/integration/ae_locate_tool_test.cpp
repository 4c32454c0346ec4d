// `vigil-dsp aelocate`, the real binary: AE sources planted at random places on a 1 m square steel
// plate (4 sensors, 3000 m/s) and along a 2 m pipe (2 sensors, 5000 m/s), their hits written as
// `vigil-listen --json` writes ae_hit events (arrival frames sample-exact at 10 MS/s, as S1's
// detector gives them), located again from the file.
//
// The tolerance, derived: an arrival rounded to its sample is off by at most half a period, 50 ns;
// a time difference by at most 100 ns, which is 0.3 mm of path at 3000 m/s. Inside the array a
// path difference error moves the position by at most ~3 times that (the dilution of the
// hyperbolas' angles inside a square): 1 mm, a tenth of the 1 % of the spacing the issue asks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace vigil {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kDsp = std::string(VIGIL_BIN_DIR) + "/vigil-dsp";
constexpr double kRate = 10e6;

struct Sensor {
  double x, y;
};
struct Planted {
  double x, y, t0;
};

class AeLocateTool : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-aelocate-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    seed_ = std::random_device{}();
    std::printf("seed %u\n", seed_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string p(const std::string& name) const { return (dir_ / name).string(); }

  // Runs vigil-dsp aelocate; its stdout lines parsed into `out`, stderr into `err`.
  int run(const std::string& args, std::vector<json>& out, std::string& err) {
    const int st = std::system((kDsp + " aelocate " + args + " >" + p("out.jsonl") + " 2>" + p("err.txt")).c_str());
    std::ifstream o(p("out.jsonl"));
    for (std::string line; std::getline(o, line);) out.push_back(json::parse(line));
    std::ifstream e(p("err.txt"));
    err.assign(std::istreambuf_iterator<char>(e), {});
    return WEXITSTATUS(st);
  }

  // The hits of each planted source on every sensor: one line each, as vigil-listen --json.
  void write_hits(const std::string& name, const std::vector<Sensor>& sensors, double velocity,
                  const std::vector<Planted>& sources, const std::vector<json>& extra = {}) {
    std::vector<json> hits = extra;
    for (const Planted& s : sources)
      for (uint32_t c = 0; c < sensors.size(); ++c) {
        const double t = s.t0 + std::hypot(s.x - sensors[c].x, s.y - sensors[c].y) / velocity;
        hits.push_back({{"type", "ae_hit"}, {"channel", c}, {"frame", uint64_t(std::llround(t * kRate))},
                        {"amplitude_db", 70.0 - c}, {"energy_eu", 10.0}});
      }
    std::sort(hits.begin(), hits.end(), [](const json& a, const json& b) { return a["frame"] < b["frame"]; });
    std::ofstream f(p(name));
    f << json{{"kind", "event"}, {"event", {{"type", "start"}, {"rate_hz", kRate}, {"seq", 0}}}}.dump() << "\n";
    for (const json& h : hits) f << json{{"kind", "event"}, {"event", h}}.dump() << "\n";
  }

  fs::path dir_;
  unsigned seed_ = 0;
};

TEST_F(AeLocateTool, PlantedSourcesOnAPlateAreLocatedWithinAMillimetreAndOutsideOnesFlagged) {
  const std::vector<Sensor> sensors = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  std::ofstream(p("plate.yaml")) << "kind: planar\nvelocity_m_s: 3000\nsensors:\n"
                                    "  - {x_m: 0, y_m: 0}\n  - {x_m: 1, y_m: 0}\n  - {x_m: 1, y_m: 1}\n"
                                    "  - {x_m: 0, y_m: 1}\nevent_lockout_s: 0.001\ncluster_cell_m: 0.25\n";
  std::mt19937 rng(seed_);
  std::uniform_real_distribution<double> in(0.05, 0.95), out(-0.8, -0.3);
  std::vector<Planted> sources;
  double t = 0.01;
  for (int i = 0; i < 30; ++i, t += 0.01) sources.push_back({in(rng), in(rng), t});
  const size_t inside = sources.size();
  for (int i = 0; i < 10; ++i, t += 0.01) sources.push_back({out(rng), in(rng), t});  // west of the plate
  // A reflection: channel 2 again 50 us after the first source's arrival there (within the event);
  // a late arrival 1 ms after the first source's emission (within its lockout).
  const double d2 = std::hypot(sources[0].x - 1, sources[0].y - 1) / 3000;
  const std::vector<json> extra = {
      {{"type", "ae_hit"}, {"channel", 2}, {"frame", uint64_t(std::llround((sources[0].t0 + d2 + 50e-6) * kRate))},
       {"amplitude_db", 40.0}, {"energy_eu", 1.0}},
      {{"type", "ae_hit"}, {"channel", 1}, {"frame", uint64_t(std::llround((sources[0].t0 + 1e-3) * kRate))},
       {"amplitude_db", 40.0}, {"energy_eu", 1.0}}};
  write_hits("plate.jsonl", sensors, 3000, sources, extra);

  std::vector<json> lines;
  std::string err;
  ASSERT_EQ(run("--geometry " + p("plate.yaml") + " --hits " + p("plate.jsonl"), lines, err), 0) << err;
  ASSERT_EQ(lines.size(), sources.size() + 1) << "one event per planted source, then the summary";
  size_t flagged_or_refused = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const json& e = lines[i];
    ASSERT_EQ(e["type"], "ae_event");
    EXPECT_EQ(e["channels"].size(), 4u) << e;
    if (i < inside) {
      ASSERT_TRUE(e["located"].get<bool>()) << e;
      EXPECT_NEAR(e["x_m"].get<double>(), sources[i].x, 1e-3) << e;
      EXPECT_NEAR(e["y_m"].get<double>(), sources[i].y, 1e-3) << e;
      EXPECT_TRUE(e["inside"].get<bool>()) << e;
      EXPECT_LT(e["residual_us"].get<double>(), 0.1) << "sample rounding only";
      EXPECT_DOUBLE_EQ(e["energy_eu"].get<double>(), 40.0) << "4 hits of 10 eu";
    } else {
      const bool located = e["located"].get<bool>();
      flagged_or_refused += !located || !e["inside"].get<bool>();
      if (located) {
        EXPECT_NEAR(e["x_m"].get<double>(), sources[i].x, 0.05) << e;
      }
    }
  }
  EXPECT_EQ(flagged_or_refused, sources.size() - inside) << "every source outside: flagged outside or not located";
  const json& s = lines.back();
  ASSERT_EQ(s["type"], "summary");
  EXPECT_EQ(s["events"], sources.size());
  EXPECT_EQ(s["hits"], 4 * sources.size() + 2);
  EXPECT_EQ(s["repeated_channel_hits"], 1);
  EXPECT_EQ(s["lockout_hits"], 1);
  EXPECT_EQ(s["rate_hz"], kRate);
  EXPECT_NEAR(s["event_definition_s"].get<double>(), std::sqrt(2.0) / 3000 * 1.2, 1e-12);
  uint64_t clustered = 0;
  for (const json& c : s["clusters"]) clustered += c["events"].get<uint64_t>();
  EXPECT_EQ(clustered, s["located"].get<uint64_t>()) << "every located event in one cell";
}

TEST_F(AeLocateTool, PlantedSourcesAlongAPipeAreLocatedAndThoseBeyondAnEndAreNot) {
  const std::vector<Sensor> sensors = {{0, 0}, {2, 0}};
  std::ofstream(p("pipe.yaml")) << "kind: linear\nvelocity_m_s: 5000\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 2, y_m: 0}\n";
  std::mt19937 rng(seed_);
  std::uniform_real_distribution<double> along(0.02, 1.98);
  std::vector<Planted> sources;
  double t = 0.01;
  for (int i = 0; i < 20; ++i, t += 0.01) sources.push_back({along(rng), 0, t});
  sources.push_back({-0.5, 0, t});
  sources.push_back({2.7, 0, t + 0.01});
  write_hits("pipe.jsonl", sensors, 5000, sources);
  std::vector<json> lines;
  std::string err;
  ASSERT_EQ(run("--geometry " + p("pipe.yaml") + " --hits " + p("pipe.jsonl"), lines, err), 0) << err;
  ASSERT_EQ(lines.size(), sources.size() + 1);
  // Along a line the tolerance is the path error itself: v x 100 ns / 2 = 0.25 mm.
  for (size_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(lines[i]["located"].get<bool>()) << lines[i];
    EXPECT_NEAR(lines[i]["x_m"].get<double>(), sources[i].x, 0.25e-3) << lines[i];
  }
  EXPECT_FALSE(lines[20]["located"].get<bool>());
  EXPECT_EQ(lines[20]["why_not"], "at or beyond the end sensor of channel 0");
  EXPECT_FALSE(lines[21]["located"].get<bool>());
  EXPECT_EQ(lines[21]["why_not"], "at or beyond the end sensor of channel 1");
  EXPECT_EQ(lines.back()["not_locatable"], 2);
}

TEST_F(AeLocateTool, ABadGeometryIsNamedWithLineAndColumnAndAMissingRateIsAsked) {
  std::ofstream(p("bad.yaml")) << "kind: planar\nsensors:\n  - {x_m: 0, y_m: 0}\nvelocty_m_s: 3000\n";
  std::ofstream(p("hits.jsonl")) << "{\"type\": \"ae_hit\", \"channel\": 0, \"frame\": 5}\n";
  std::vector<json> lines;
  std::string err;
  EXPECT_EQ(run("--geometry " + p("bad.yaml") + " --hits " + p("hits.jsonl"), lines, err), 1);
  EXPECT_NE(err.find(p("bad.yaml") + ":4:1: unknown key 'velocty_m_s' in the geometry (did you mean 'velocity_m_s'?)"),
            std::string::npos)
      << err;
  std::ofstream(p("ok.yaml")) << "kind: linear\nvelocity_m_s: 5000\nsensors: [{x_m: 0, y_m: 0}, {x_m: 1, y_m: 0}]\n";
  lines.clear();
  EXPECT_EQ(run("--geometry " + p("ok.yaml") + " --hits " + p("hits.jsonl"), lines, err), 2);
  EXPECT_NE(err.find("no start event gives the sample rate; give --rate"), std::string::npos) << err;
  lines.clear();
  EXPECT_EQ(run("--geometry " + p("ok.yaml") + " --hits " + p("hits.jsonl") + " --rate 1e6", lines, err), 0) << err;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["why_not"], "too few hits (1 of 2)");
}

}  // namespace
}  // namespace vigil
