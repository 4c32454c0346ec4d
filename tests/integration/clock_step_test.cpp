// The wall clock stepping under the real vigild, as when NTP first sets the clock of a rig that
// booted without one (tests/support/clock_step_preload.cpp moves CLOCK_REALTIME an hour forward
// half a second into the run): the source's UTC time line follows it from one chunk on; the step
// is counted, logged and sent as a source event; vigil-listen sees one time step on every stream,
// no sample missing, repeated or lost, and its recording starts a segment there whose timestamp
// is the frame count's plus the step, to the picosecond.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../support/ports.hpp"
#include "../support/process.hpp"

namespace vigil {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr double kRate = 51200, kSeconds = 3, kStepS = 3600;
constexpr uint32_t kChunk = 1024;

TEST(ClockStep, TheTimeLineFollowsAWallClockStepAndNothingIsLost) {
  const fs::path dir = fs::temp_directory_path() / ("vigil-clock-step-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const uint16_t event_port = test::free_udp_port(), data_port = test::free_udp_port();
  const fs::path config = dir / "rig.yaml";
  std::ofstream(config) << "source: {kind: synthetic, rate_hz: " << kRate << ", channels: 2, chunk_frames: " << kChunk
                        << ", rate_factor: 2, duration_s: " << kSeconds << ", seed: 3}\n"
                        << "pipeline: {pool_chunks: 512, output_slots: 512}\n"
                        << "outputs:\n"
                        << "  - {kind: vita49, stream: input, destination: \"127.0.0.1:" << data_port << "\"}\n"
                        << "  - {kind: events, destination: \"127.0.0.1:" << event_port
                        << "\", status_interval_s: 10}\n";
  const std::string listen_out = (dir / "listen.jsonl").string(), log = (dir / "vigild.log").string();
  test::Process listen({std::string(VIGIL_BIN_DIR) + "/vigil-listen", "--data-port", std::to_string(data_port),
                        "--event-port", std::to_string(event_port), "--json", "--record", (dir / "rec").string(),
                        "--seconds", "60"},
                       listen_out);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it bind
  // The library is preloaded into vigild alone (not the shell). ASan builds: it comes before the
  // sanitizer's runtime in the link order, which ASan would otherwise refuse.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string env = "LD_PRELOAD=" VIGIL_CLOCK_STEP_PRELOAD " VIGIL_TEST_CLOCK_STEP_S=" +
                          std::to_string(int(kStepS)) + " VIGIL_TEST_CLOCK_STEP_AFTER_S=0.5 ASAN_OPTIONS=" +
                          (asan ? std::string(asan) + ":" : "") + "verify_asan_link_order=0";
  test::Process vigild({"/bin/sh", "-c",
                        env + " exec " + std::string(VIGIL_BIN_DIR) + "/vigild --config " + config.string() +
                            " --log-interval 0 2>" + log});
  const int status = vigild.wait(std::chrono::seconds(30));
  ASSERT_NE(status, -1);
  const std::string journal = test::read_text(log);
  EXPECT_EQ(WEXITSTATUS(status), 0) << journal;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  listen.signal(SIGINT);
  ASSERT_NE(listen.wait(std::chrono::seconds(5)), -1);

  EXPECT_NE(journal.find("the wall clock stepped by +3600.0"), std::string::npos) << journal;
  std::vector<json> steps;
  json final_status, summary;
  std::ifstream lines(listen_out);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line);
    if (j["kind"] == "summary") summary = j;
    if (j["kind"] != "event") continue;
    const json& e = j["event"];
    if (e["type"] == "source" && e.value("state", "") == "clock_step") steps.push_back(e);
    if (e["type"] == "status" && e.value("final", false)) final_status = e;
  }
  ASSERT_EQ(steps.size(), 1u) << journal;
  const double step_s = steps[0]["step_s"].get<double>();
  EXPECT_NEAR(step_s, kStepS, 0.01);  // the shim's hour, read through two clocks
  const uint64_t frame = steps[0]["frame"].get<uint64_t>();
  EXPECT_EQ(frame % kChunk, 0u) << "the time line moves at a chunk";
  EXPECT_GT(frame, 0u);
  EXPECT_LT(frame, uint64_t(kRate * kSeconds));
  ASSERT_FALSE(final_status.is_null());
  EXPECT_EQ(final_status["clock_steps"], 1);
  EXPECT_EQ(final_status["dropped_frames"], 0);
  EXPECT_EQ(final_status["send_errors"], 0);

  ASSERT_FALSE(summary.is_null());
  EXPECT_EQ(summary["event_gaps"], 0);
  ASSERT_EQ(summary["streams"].size(), 2u);
  for (const json& s : summary["streams"]) {
    EXPECT_EQ(s["samples"], uint64_t(kRate * kSeconds)) << s;
    EXPECT_EQ(s["time_steps"], 1) << s;
    EXPECT_EQ(s["gaps"], 0) << s;
    EXPECT_EQ(s["holes"], 0) << s;
    EXPECT_EQ(s["samples_missing"], 0) << s;
    EXPECT_EQ(s["overlaps"], 0) << s;
    EXPECT_EQ(s["timestamp_errors"], 0) << s;
    EXPECT_EQ(s["sample_loss_flags"], 0) << s;
  }
  // The recording: a segment from the step on, stamped the frame count's time plus the step.
  size_t sidecars = 0;
  for (const auto& entry : fs::directory_iterator(dir / "rec")) {
    if (entry.path().extension() != ".json") continue;
    ++sidecars;
    const json side = json::parse(std::ifstream(entry.path()));
    ASSERT_EQ(side["segments"].size(), 2u) << side;
    const json& a = side["segments"][0];
    const json& b = side["segments"][1];
    EXPECT_EQ(b["sample"], frame);
    const double from_a = double(b["ts_int"].get<int64_t>() - a["ts_int"].get<int64_t>()) +
                          (double(b["ts_frac_ps"].get<int64_t>()) - double(a["ts_frac_ps"].get<int64_t>())) * 1e-12;
    EXPECT_NEAR(from_a, double(frame) / kRate + step_s, 2e-6) << side;
  }
  EXPECT_EQ(sidecars, 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil
