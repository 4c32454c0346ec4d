// The wall clock stepping under the real vigild, as when NTP first sets the clock of a rig that
// booted without one (tests/support/clock_step_preload.cpp moves CLOCK_REALTIME an hour forward
// half a second into the run): the source's UTC time line follows it from one chunk on; the step
// is counted, logged and sent as a source event; vigil-listen sees one time step on every stream,
// no sample missing, repeated or lost, and its recording starts a segment there whose timestamp
// is the frame count's plus the step, to the picosecond. A clock nudged a few milliseconds at a
// time (a virtual machine's time agent) leaves the time line unbroken.
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

// What one run of the real vigild with a moved wall clock sent, as vigil-listen received it.
struct ClockRun {
  fs::path dir;
  int exit_status = -1;
  std::string journal;
  std::vector<json> steps;  // source events clock_step
  json final_status, summary;
};

// vigild's synthetic source at 2x for kSeconds of signal, its input and events to vigil-listen
// (which records); `clock` is the preloaded library's settings (VIGIL_TEST_CLOCK_*).
ClockRun run_with_clock(const std::string& name, const std::string& clock) {
  ClockRun run;
  run.dir = fs::temp_directory_path() / ("vigil-clock-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(run.dir);
  fs::create_directories(run.dir);
  const uint16_t event_port = test::free_udp_port(), data_port = test::free_udp_port();
  const fs::path config = run.dir / "rig.yaml";
  std::ofstream(config) << "source: {kind: synthetic, rate_hz: " << kRate << ", channels: 2, chunk_frames: " << kChunk
                        << ", rate_factor: 2, duration_s: " << kSeconds << ", seed: 3}\n"
                        << "pipeline: {pool_chunks: 512, output_slots: 512}\n"
                        << "outputs:\n"
                        << "  - {kind: vita49, stream: input, destination: \"127.0.0.1:" << data_port << "\"}\n"
                        << "  - {kind: events, destination: \"127.0.0.1:" << event_port
                        << "\", status_interval_s: 10}\n";
  const std::string listen_out = (run.dir / "listen.jsonl").string(), log = (run.dir / "vigild.log").string();
  test::Process listen({std::string(VIGIL_BIN_DIR) + "/vigil-listen", "--data-port", std::to_string(data_port),
                        "--event-port", std::to_string(event_port), "--json", "--record", (run.dir / "rec").string(),
                        "--seconds", "60"},
                       listen_out);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it bind
  // The library is preloaded into vigild alone (not the shell). ASan builds: it comes before the
  // sanitizer's runtime in the link order, which ASan would otherwise refuse.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string env = "LD_PRELOAD=" VIGIL_CLOCK_STEP_PRELOAD " " + clock + " ASAN_OPTIONS=" +
                          (asan ? std::string(asan) + ":" : "") + "verify_asan_link_order=0";
  test::Process vigild({"/bin/sh", "-c",
                        env + " exec " + std::string(VIGIL_BIN_DIR) + "/vigild --config " + config.string() +
                            " --log-interval 0 2>" + log});
  run.exit_status = vigild.wait(std::chrono::seconds(30));
  run.journal = test::read_text(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  listen.signal(SIGINT);
  if (listen.wait(std::chrono::seconds(5)) == -1) ADD_FAILURE() << "vigil-listen did not stop";
  std::ifstream lines(listen_out);
  for (std::string line; std::getline(lines, line);) {
    const json j = json::parse(line);
    if (j["kind"] == "summary") run.summary = j;
    if (j["kind"] != "event") continue;
    const json& e = j["event"];
    if (e["type"] == "source" && e.value("state", "") == "clock_step") run.steps.push_back(e);
    if (e["type"] == "status" && e.value("final", false)) run.final_status = e;
  }
  return run;
}

// Every sample of both streams arrived once, none lost, with `time_steps` breaks of the time line.
void expect_streams_complete(const json& summary, int time_steps) {
  ASSERT_FALSE(summary.is_null());
  EXPECT_EQ(summary["event_gaps"], 0);
  ASSERT_EQ(summary["streams"].size(), 2u);
  for (const json& s : summary["streams"]) {
    EXPECT_EQ(s["samples"], uint64_t(kRate * kSeconds)) << s;
    EXPECT_EQ(s["time_steps"], time_steps) << s;
    EXPECT_EQ(s["gaps"], 0) << s;
    EXPECT_EQ(s["holes"], 0) << s;
    EXPECT_EQ(s["samples_missing"], 0) << s;
    EXPECT_EQ(s["overlaps"], 0) << s;
    EXPECT_EQ(s["timestamp_errors"], 0) << s;
    EXPECT_EQ(s["sample_loss_flags"], 0) << s;
  }
}

TEST(ClockStep, TheTimeLineFollowsAWallClockStepAndNothingIsLost) {
  // The hour, on a clock that a time agent also nudges by 1 ms every 200 ms (as a CI guest's was):
  // one step, the nudges so far in it.
  const ClockRun run = run_with_clock("step", "VIGIL_TEST_CLOCK_STEP_S=" + std::to_string(int(kStepS)) +
                                                  " VIGIL_TEST_CLOCK_STEP_AFTER_S=0.5"
                                                  " VIGIL_TEST_CLOCK_NUDGE_S=0.001 VIGIL_TEST_CLOCK_NUDGE_EVERY_S=0.2");
  ASSERT_NE(run.exit_status, -1);
  EXPECT_EQ(WEXITSTATUS(run.exit_status), 0) << run.journal;
  EXPECT_NE(run.journal.find("the wall clock stepped by +3600.0"), std::string::npos) << run.journal;
  ASSERT_EQ(run.steps.size(), 1u) << run.journal;
  const double step_s = run.steps[0]["step_s"].get<double>();
  EXPECT_NEAR(step_s, kStepS, 0.01);  // the shim's hour and nudges, read through two clocks
  const uint64_t frame = run.steps[0]["frame"].get<uint64_t>();
  EXPECT_EQ(frame % kChunk, 0u) << "the time line moves at a chunk";
  EXPECT_GT(frame, 0u);
  EXPECT_LT(frame, uint64_t(kRate * kSeconds));
  ASSERT_FALSE(run.final_status.is_null());
  EXPECT_EQ(run.final_status["clock_steps"], 1);
  EXPECT_EQ(run.final_status["dropped_frames"], 0);
  EXPECT_EQ(run.final_status["send_errors"], 0);
  expect_streams_complete(run.summary, 1);

  // The recording: a segment from the step on, stamped the frame count's time plus the step.
  size_t sidecars = 0;
  for (const auto& entry : fs::directory_iterator(run.dir / "rec")) {
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
  fs::remove_all(run.dir);
}

TEST(ClockStep, AClockNudgedByMillisecondsKeepsTheTimeLineUnbroken) {
  // 2 ms every 100 ms, four times what the CI guest's agent did: 30 ms over the 1.5 s run, under
  // the size of a step followed at once and never lasting the settle time.
  const ClockRun run = run_with_clock("nudge", "VIGIL_TEST_CLOCK_NUDGE_S=0.002 VIGIL_TEST_CLOCK_NUDGE_EVERY_S=0.1");
  ASSERT_NE(run.exit_status, -1);
  EXPECT_EQ(WEXITSTATUS(run.exit_status), 0) << run.journal;
  EXPECT_EQ(run.journal.find("the wall clock stepped"), std::string::npos) << run.journal;
  EXPECT_TRUE(run.steps.empty()) << run.journal;
  ASSERT_FALSE(run.final_status.is_null());
  EXPECT_EQ(run.final_status["clock_steps"], 0);
  EXPECT_EQ(run.final_status["dropped_frames"], 0);
  expect_streams_complete(run.summary, 0);
  size_t sidecars = 0;
  for (const auto& entry : fs::directory_iterator(run.dir / "rec")) {
    if (entry.path().extension() != ".json") continue;
    ++sidecars;
    EXPECT_EQ(json::parse(std::ifstream(entry.path()))["segments"].size(), 1u) << "one unbroken time line";
  }
  EXPECT_EQ(sidecars, 2u);
  fs::remove_all(run.dir);
}

}  // namespace
}  // namespace vigil
