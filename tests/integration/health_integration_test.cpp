// Field health end to end: the real vigild reads a sysfs tree the test builds and changes while it
// runs (a zone heating past its limit and cooling, the GPU's clock capped), and the real
// vigil-listen prints the health alarms and the status's hottest zone and throttled clocks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "../support/ports.hpp"
#include "../support/process.hpp"
#include "../support/temp_dir.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
const std::string kVigild = std::string(VIGIL_BIN_DIR) + "/vigild";
const std::string kListen = std::string(VIGIL_BIN_DIR) + "/vigil-listen";

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p.string() + ".new") << text << "\n";
  fs::rename(p.string() + ".new", p);  // whole, as sysfs gives a value: never a half-written file
}

// Waits up to `limit` for `text` in the file; returns whether it came.
bool wait_for_text(const std::string& path, const std::string& text, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (test::read_text(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(HealthIntegration, AHotZoneAndACappedGpuClockAreAlarmedClearedAndShown) {
  test::TempDir dir("health-int");
  const fs::path sys = dir.path / "sys";
  const fs::path zone = sys / "class/thermal/thermal_zone1";
  const fs::path gpu = sys / "class/devfreq/17000000.ga10b";
  put(zone / "type", "GPU-therm");
  put(zone / "temp", "60000");
  put(gpu / "cur_freq", "1300000000");
  put(gpu / "min_freq", "306000000");
  put(gpu / "max_freq", "1300000000");
  put(gpu / "available_frequencies", "306000000 612000000 1300000000");

  const uint16_t event_port = test::free_udp_port();
  const std::string config = dir.write("vigil.yaml", R"(source: {kind: synthetic, rate_hz: 8000, channels: 1, chunk_frames: 80}
health: {sysfs_root: )" + sys.string() + R"(, temperature_alarm_c: 90, throttle_clear_s: 1}
outputs:
  - {kind: events, destination: "127.0.0.1:)" + std::to_string(event_port) + R"(", status_interval_s: 0.5}
)");
  const std::string lines = dir.file("listen.txt");
  test::Process listen({kListen, "--event-port", std::to_string(event_port), "--data-port",
                        std::to_string(test::free_udp_port())},
                       lines);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it bind
  test::Process vigild({"/bin/sh", "-c", "exec " + kVigild + " --config " + config + " --log-interval 0 2>" +
                                             dir.file("vigild.log")});
  ASSERT_TRUE(wait_for_text(lines, "event start", std::chrono::seconds(20))) << test::read_text(dir.file("vigild.log"));
  ASSERT_TRUE(wait_for_text(lines, "hottest GPU-therm 60.0 C", std::chrono::seconds(10))) << test::read_text(lines);

  put(zone / "temp", "95000");
  put(gpu / "max_freq", "612000000");
  put(gpu / "cur_freq", "612000000");
  EXPECT_TRUE(wait_for_text(lines, "temperature raised: GPU-therm at 95.0 C (limit 90.0 C)", std::chrono::seconds(10)));
  EXPECT_TRUE(wait_for_text(lines, "throttling raised: devfreq/17000000.ga10b (gpu) at 612 MHz, cap 612 of 1300 MHz",
                            std::chrono::seconds(10)));
  EXPECT_TRUE(wait_for_text(lines, "hottest GPU-therm 95.0 C, throttled: devfreq/17000000.ga10b", std::chrono::seconds(10)));

  put(zone / "temp", "80000");
  put(gpu / "max_freq", "1300000000");
  put(gpu / "cur_freq", "1300000000");
  EXPECT_TRUE(wait_for_text(lines, "temperature cleared: GPU-therm at 80.0 C (limit 85.0 C)", std::chrono::seconds(10)));
  EXPECT_TRUE(wait_for_text(lines, "throttling cleared: devfreq/17000000.ga10b", std::chrono::seconds(10)));

  vigild.signal(SIGTERM);
  const int status = vigild.wait(std::chrono::seconds(10));
  listen.signal(SIGINT);
  listen.wait(std::chrono::seconds(5));
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << test::read_text(dir.file("vigild.log"));
  // Each alarm once: raised once and cleared once.
  const std::string text = test::read_text(lines);
  for (const char* once : {"temperature raised", "temperature cleared", "throttling raised", "throttling cleared"}) {
    const size_t first = text.find(once);
    EXPECT_NE(first, std::string::npos) << once;
    EXPECT_EQ(text.find(once, first + 1), std::string::npos) << once << " twice:\n" << text;
  }
}

}  // namespace
}  // namespace vigil
