// The SoC's sensors read from a sysfs tree the test builds (thermal zones, cpufreq policies, devfreq
// devices, a Jetson's device tree), and the health alarms HealthMonitor raises and clears from them.
#include "pipeline/health_monitor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../support/temp_dir.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kS = 1'000'000'000;

// A sysfs tree in a scratch folder.
struct FakeSysfs {
  test::TempDir dir{"sysfs-" + std::to_string(reinterpret_cast<uintptr_t>(this))};
  std::string root() const { return dir.path.string(); }
  void put(const std::string& rel, const std::string& text) const {
    const fs::path p = dir.path / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  void zone(int n, const std::string& type, const std::string& milli_c) const {
    put("class/thermal/thermal_zone" + std::to_string(n) + "/type", type);
    put("class/thermal/thermal_zone" + std::to_string(n) + "/temp", milli_c);
  }
  void policy(int n, long cur_khz, long min_khz, long cap_khz, long max_khz) const {
    const std::string p = "devices/system/cpu/cpufreq/policy" + std::to_string(n) + "/";
    put(p + "scaling_cur_freq", std::to_string(cur_khz));
    put(p + "scaling_min_freq", std::to_string(min_khz));
    put(p + "scaling_max_freq", std::to_string(cap_khz));
    put(p + "cpuinfo_max_freq", std::to_string(max_khz));
  }
  void devfreq(const std::string& name, long cur_hz, long min_hz, long cap_hz, const std::string& available) const {
    const std::string p = "class/devfreq/" + name + "/";
    put(p + "cur_freq", std::to_string(cur_hz));
    put(p + "min_freq", std::to_string(min_hz));
    put(p + "max_freq", std::to_string(cap_hz));
    if (!available.empty()) put(p + "available_frequencies", available);
  }
};

// Events a monitor posted, in order.
struct Posted {
  std::vector<std::pair<std::string, nlohmann::json>> events;
  HealthMonitor::Post post() {
    return [this](const std::string& type, nlohmann::json body) { events.emplace_back(type, std::move(body)); };
  }
};

HealthSettings settings_for(const FakeSysfs& fs) {
  HealthSettings s;
  s.sysfs_root = fs.root();
  return s;
}

TEST(SocSensors, ZonesPoliciesAndDevfreqAreReadAsTheKernelWritesThem) {
  FakeSysfs t;
  t.zone(0, "cpu-thermal", "48500");
  t.zone(1, "GPU-therm", "61250");
  t.zone(2, "CV0-therm", "-256000");  // a Jetson sensor switched off: left out, not an error
  t.zone(3, "acpitz", "30000");
  t.zone(10, "acpitz", "31000");      // repeated types get their index; zone10 sorts after zone3
  t.zone(4, "broken", "hot");         // malformed: an error, left out
  t.policy(0, 1200000, 115200, 2201600, 2201600);
  t.policy(4, 729600, 729600, 729600, 2201600);
  t.devfreq("17000000.ga10b", 306000000, 306000000, 1300500000, "306000000 612000000 1300500000");
  t.devfreq("15340000.vic", 115200000, 115200000, 729600000, "");
  t.put("firmware/devicetree/base/compatible", std::string("nvidia,p3737-0000\0nvidia,tegra234", 32));

  const SocReadings r = read_soc_sensors(t.root());
  ASSERT_EQ(r.zones.size(), 4u);
  EXPECT_EQ(r.zones[0].name, "cpu-thermal");
  EXPECT_DOUBLE_EQ(r.zones[0].temp_c, 48.5);
  EXPECT_EQ(r.zones[1].name, "GPU-therm");
  EXPECT_DOUBLE_EQ(r.zones[1].temp_c, 61.25);
  EXPECT_EQ(r.zones[2].name, "acpitz-0");
  EXPECT_EQ(r.zones[3].name, "acpitz-1");
  EXPECT_DOUBLE_EQ(r.zones[3].temp_c, 31.0);
  EXPECT_EQ(r.read_errors, 1u);
  ASSERT_EQ(r.clocks.size(), 4u);
  EXPECT_EQ(r.clocks[0].name, "cpufreq/policy0");
  EXPECT_EQ(r.clocks[0].kind, "cpu");
  EXPECT_DOUBLE_EQ(r.clocks[0].cur_hz, 1.2e9);
  EXPECT_DOUBLE_EQ(r.clocks[0].cap_hz, 2.2016e9);
  EXPECT_DOUBLE_EQ(r.clocks[1].hw_max_hz, 2.2016e9);
  EXPECT_EQ(r.clocks[2].name, "devfreq/15340000.vic");
  EXPECT_EQ(r.clocks[2].kind, "other");
  EXPECT_DOUBLE_EQ(r.clocks[2].hw_max_hz, 729.6e6);  // no list: the cap
  EXPECT_EQ(r.clocks[3].name, "devfreq/17000000.ga10b");
  EXPECT_EQ(r.clocks[3].kind, "gpu");
  EXPECT_DOUBLE_EQ(r.clocks[3].hw_max_hz, 1300.5e6);
  EXPECT_TRUE(r.tegra);
}

TEST(SocSensors, AMachineWithoutTheFoldersReadsAsNothing) {
  FakeSysfs t;
  const SocReadings r = read_soc_sensors(t.root());
  EXPECT_TRUE(r.zones.empty());
  EXPECT_TRUE(r.clocks.empty());
  EXPECT_EQ(r.read_errors, 0u);
  EXPECT_FALSE(r.tegra);
  EXPECT_TRUE(read_soc_sensors(t.root() + "/no/such/root").zones.empty());
}

TEST(HealthMonitor, ATemperatureAlarmRisesAtItsLevelAndClearsBelowTheClearLevelOnce) {
  FakeSysfs t;
  t.zone(0, "GPU-therm", "80000");
  Posted p;
  HealthSettings s = settings_for(t);
  s.temperature_alarm_c = 90;
  s.temperature_clear_c = 85;
  HealthMonitor m(s, p.post());
  int64_t now = 0;
  for (const char* milli : {"80000", "89999", "90000", "95000", "86000", "85000", "84999", "84000", "90500"}) {
    t.zone(0, "GPU-therm", milli);
    m.sample(now += kS);
  }
  ASSERT_EQ(p.events.size(), 3u);
  EXPECT_EQ(p.events[0].first, "health");
  EXPECT_EQ(p.events[0].second["state"], "raised");
  EXPECT_EQ(p.events[0].second["rule"], "temperature");
  EXPECT_EQ(p.events[0].second["zone"], "GPU-therm");
  EXPECT_DOUBLE_EQ(p.events[0].second["temp_c"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(p.events[0].second["limit_c"].get<double>(), 90.0);
  EXPECT_EQ(p.events[1].second["state"], "cleared");
  EXPECT_DOUBLE_EQ(p.events[1].second["temp_c"].get<double>(), 84.999);
  EXPECT_DOUBLE_EQ(p.events[1].second["limit_c"].get<double>(), 85.0);
  EXPECT_EQ(p.events[2].second["state"], "raised");
  const nlohmann::json st = m.status_json();
  EXPECT_EQ(st["readings"], 9u);
  EXPECT_EQ(st["alarms_raised"], 2u);
  EXPECT_EQ(st["alarms_active"], 1u);
  EXPECT_DOUBLE_EQ(st["zones"][0]["temp_c"].get<double>(), 90.5);
}

TEST(HealthMonitor, AThrottledClockAgainstItsHardwareMaximumClearsOnlyAfterTheClearTime) {
  FakeSysfs t;
  t.devfreq("17000000.ga10b", 1300500000, 306000000, 1300500000, "306000000 1300500000");
  Posted p;
  HealthSettings s = settings_for(t);
  s.throttle_reference = "hardware";
  s.throttle_clear_s = 10;
  HealthMonitor m(s, p.post());
  m.sample(1 * kS);
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(m.status_json()["clocks"][0]["throttled"], false);
  t.devfreq("17000000.ga10b", 612000000, 306000000, 612000000, "306000000 1300500000");  // capped: too hot
  m.sample(2 * kS);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].second["rule"], "throttling");
  EXPECT_EQ(p.events[0].second["state"], "raised");
  EXPECT_EQ(p.events[0].second["clock"], "devfreq/17000000.ga10b");
  EXPECT_EQ(p.events[0].second["kind"], "gpu");
  EXPECT_DOUBLE_EQ(p.events[0].second["cap_mhz"].get<double>(), 612.0);
  EXPECT_DOUBLE_EQ(p.events[0].second["max_mhz"].get<double>(), 1300.5);
  EXPECT_EQ(m.status_json()["clocks"][0]["throttled"], true);
  t.devfreq("17000000.ga10b", 1300500000, 306000000, 1300500000, "306000000 1300500000");
  m.sample(3 * kS);
  m.sample(12 * kS);  // 9 s without: still raised
  EXPECT_EQ(p.events.size(), 1u);
  m.sample(13 * kS);  // 10 s without
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[1].second["state"], "cleared");
  EXPECT_EQ(m.status_json()["alarms_active"], 0u);
}

TEST(HealthMonitor, OnAJetsonAClockCappedFromTheStartIsThrottledAndSaidAtStart) {
  FakeSysfs t;
  t.put("firmware/devicetree/base/compatible", std::string("nvidia,tegra234\0", 16));
  t.policy(0, 1497600, 115200, 1497600, 2201600);  // a power mode below the highest, or too hot
  Posted p;
  HealthMonitor m(settings_for(t), p.post());  // throttle_reference: auto
  m.start();
  m.stop();
  EXPECT_TRUE(m.reference_is_hardware());
  ASSERT_EQ(m.start_notes().size(), 1u);
  EXPECT_EQ(m.start_notes()[0],
            "cpufreq/policy0: capped at 1.5 of 2.2 GHz (a power mode below the highest, or throttling already)");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].second["state"], "raised");
  EXPECT_EQ(m.status_json()["throttle_reference"], "hardware");
}

TEST(HealthMonitor, ElsewhereTheCapAtStartIsTheReferenceAndAFallFromItIsThrottling) {
  FakeSysfs t;
  t.policy(0, 1497600, 115200, 1497600, 2201600);  // a laptop's power profile: not an alarm
  Posted p;
  HealthMonitor m(settings_for(t), p.post());
  m.sample(1 * kS);
  EXPECT_FALSE(m.reference_is_hardware());
  EXPECT_TRUE(p.events.empty());
  t.policy(0, 998400, 115200, 998400, 2201600);
  m.sample(2 * kS);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].second["clock"], "cpufreq/policy0");
  EXPECT_DOUBLE_EQ(p.events[0].second["cap_mhz"].get<double>(), 998.4);
}

TEST(HealthMonitor, APinnedClockHeldBelowItsFloorIsThrottledWhateverItsCap) {
  FakeSysfs t;
  t.policy(0, 2201600, 2201600, 2201600, 2201600);  // jetson_clocks: floor = cap = max
  Posted p;
  HealthMonitor m(settings_for(t), p.post());
  m.sample(1 * kS);
  t.policy(0, 1900000, 2201600, 2201600, 2201600);  // the hardware holds it down
  m.sample(2 * kS);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_DOUBLE_EQ(p.events[0].second["cur_mhz"].get<double>(), 1900.0);
  // An idle clock under a governor (floor below the cap) is not throttled.
  t.policy(1, 115200, 115200, 2201600, 2201600);
  m.sample(3 * kS);
  EXPECT_EQ(m.status_json()["clocks"][1]["throttled"], false);
}

TEST(HealthMonitor, ThrottleAlarmOffReportsButRaisesNothing) {
  FakeSysfs t;
  t.policy(0, 2201600, 2201600, 2201600, 2201600);
  Posted p;
  HealthSettings s = settings_for(t);
  s.throttle_alarm = false;
  HealthMonitor m(s, p.post());
  m.sample(1 * kS);
  t.policy(0, 998400, 115200, 998400, 2201600);
  m.sample(2 * kS);
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(m.status_json()["clocks"][0]["throttled"], true);
}

TEST(HealthMonitor, TheThreadReadsEveryIntervalAndStopsAtOnce) {
  FakeSysfs t;
  t.zone(0, "cpu-thermal", "40000");
  Posted p;
  HealthMonitor m(settings_for(t), p.post());  // interval_s 1
  m.start();
  EXPECT_EQ(m.status_json()["readings"], 1u);  // the first before start() returns
  const auto t0 = std::chrono::steady_clock::now();
  while (m.status_json()["readings"].get<uint64_t>() < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(m.status_json()["readings"].get<uint64_t>(), 2u);
  const auto t1 = std::chrono::steady_clock::now();
  m.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::milliseconds(500));  // not a whole interval
  EXPECT_TRUE(p.events.empty());
}

}  // namespace
}  // namespace vigil
