#include "pipeline/health_monitor.hpp"

#include <cmath>
#include <cstdio>

#include "core/clock.hpp"
#include "core/thread_name.hpp"

namespace vigil {
namespace {

constexpr double kKelvin = 273.15;  // AlarmRuleState wants levels above 0: temperatures go in kelvin
constexpr double kNsPerS = 1e9;     // the rules' "frames" are monotonic nanoseconds

double mhz(double hz) { return std::round(hz / 1e5) / 10.0; }  // 0.1 MHz: what an operator reads

std::string ghz(double hz) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", hz / 1e9);
  return b;
}

}  // namespace

HealthMonitor::HealthMonitor(const HealthSettings& settings, Post post) : s_(settings), post_(std::move(post)) {}

HealthMonitor::~HealthMonitor() { stop(); }

void HealthMonitor::start() {
  sample(mono_now_ns());
  thread_ = std::thread([this] {
    name_this_thread("vigil-health");
    std::unique_lock<std::mutex> lock(wake_mutex_);
    const auto period = std::chrono::nanoseconds(int64_t(s_.interval_s * kNsPerS));
    while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      sample(mono_now_ns());
      lock.lock();
    }
  });
}

void HealthMonitor::stop() {
  {
    const std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool HealthMonitor::throttled(const ClockReading& c) const {
  if (c.held_below_floor()) return true;
  double reference = c.hw_max_hz;
  if (!hardware_reference_) {
    const auto it = start_cap_hz_.find(c.name);
    reference = it != start_cap_hz_.end() ? it->second : c.cap_hz;
  }
  return c.cap_hz < reference * 0.999;
}

void HealthMonitor::sample(int64_t now_ns) {
  SocReadings r = read_soc_sensors(s_.sysfs_root);
  if (first_) {
    first_ = false;
    hardware_reference_ = s_.throttle_reference == "hardware" || (s_.throttle_reference == "auto" && r.tegra);
    for (const ClockReading& c : r.clocks) {
      start_cap_hz_[c.name] = c.cap_hz;
      if (c.cap_hz < c.hw_max_hz * 0.999)
        start_notes_.push_back(c.name + ": capped at " + ghz(c.cap_hz) + " of " + ghz(c.hw_max_hz) +
                               " GHz (a power mode below the highest, or throttling already)");
    }
  }
  readings_.fetch_add(1, std::memory_order_relaxed);
  read_errors_.fetch_add(r.read_errors, std::memory_order_relaxed);
  evaluate(r, now_ns);
  const std::lock_guard<std::mutex> lock(mutex_);
  last_ = std::move(r);
}

void HealthMonitor::evaluate(const SocReadings& r, int64_t now_ns) {
  auto step = [&](std::map<std::string, Rule>& rules, const std::string& key, const AlarmRuleSettings& rs,
                  double value) -> std::optional<AlarmTransition> {
    Rule& rule = rules[key];
    if (!rule.state) rule.state = std::make_unique<AlarmRuleState>(rs, kNsPerS);
    const auto t = rule.state->evaluate(value, uint64_t(now_ns));
    if (t) {
      rule.raised = t->to != AlarmLevel::kNormal;
      if (rule.raised) alarms_raised_.fetch_add(1, std::memory_order_relaxed);
    }
    return t;
  };

  AlarmRuleSettings temp;
  temp.alert = s_.temperature_alarm_c + kKelvin;
  temp.hysteresis = s_.temperature_alarm_c - s_.temperature_clear_c;
  for (const ThermalZoneReading& z : r.zones) {
    const auto t = step(zone_rules_, z.name, temp, z.temp_c + kKelvin);
    if (!t) continue;
    const bool raised = t->to != AlarmLevel::kNormal;
    post_("health", {{"state", raised ? "raised" : "cleared"},
                     {"rule", "temperature"},
                     {"zone", z.name},
                     {"temp_c", z.temp_c},
                     {"limit_c", raised ? s_.temperature_alarm_c : s_.temperature_clear_c}});
  }

  std::map<std::string, bool> now_throttled;
  AlarmRuleSettings thr;
  thr.alert = 1;
  thr.hysteresis = 0.5;
  thr.off_delay_s = s_.throttle_clear_s;
  for (const ClockReading& c : r.clocks) {
    const bool is = throttled(c);
    now_throttled[c.name] = is;
    if (!s_.throttle_alarm) continue;
    const auto t = step(clock_rules_, c.name, thr, is ? 1.0 : 0.0);
    if (!t) continue;
    const bool raised = t->to != AlarmLevel::kNormal;
    post_("health", {{"state", raised ? "raised" : "cleared"},
                     {"rule", "throttling"},
                     {"clock", c.name},
                     {"kind", c.kind},
                     {"cur_mhz", mhz(c.cur_hz)},
                     {"cap_mhz", mhz(c.cap_hz)},
                     {"max_mhz", mhz(c.hw_max_hz)}});
  }

  unsigned active = 0;
  for (const auto* rules : {&zone_rules_, &clock_rules_})
    for (const auto& [name, rule] : *rules) active += rule.raised ? 1 : 0;
  active_.store(active, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(mutex_);
  last_throttled_ = std::move(now_throttled);
}

nlohmann::json HealthMonitor::status_json() const {
  nlohmann::json j;
  j["readings"] = readings_.load(std::memory_order_relaxed);
  j["read_errors"] = read_errors_.load(std::memory_order_relaxed);
  j["alarms_raised"] = alarms_raised_.load(std::memory_order_relaxed);
  j["alarms_active"] = active_.load(std::memory_order_relaxed);
  j["throttle_reference"] = hardware_reference_ ? "hardware" : "start";
  nlohmann::json zones = nlohmann::json::array(), clocks = nlohmann::json::array();
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const ThermalZoneReading& z : last_.zones) zones.push_back({{"zone", z.name}, {"temp_c", z.temp_c}});
  for (const ClockReading& c : last_.clocks) {
    const auto t = last_throttled_.find(c.name);
    clocks.push_back({{"clock", c.name},
                      {"kind", c.kind},
                      {"cur_hz", uint64_t(c.cur_hz)},
                      {"cap_hz", uint64_t(c.cap_hz)},
                      {"max_hz", uint64_t(c.hw_max_hz)},
                      {"throttled", t != last_throttled_.end() && t->second}});
  }
  j["zones"] = std::move(zones);
  j["clocks"] = std::move(clocks);
  return j;
}

}  // namespace vigil
