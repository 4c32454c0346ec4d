// HealthMonitor: the field health of the machine vigild runs on. A Jetson in a hot cabinet
// throttles its clocks and then misses deadlines for no reason its operator can see: this reads
// the SoC's temperatures and clock limits (soc_sensors.hpp) every `health.interval_s` (at least a
// second) on a thread of its own (vigil-health, never a real-time one), keeps the last reading
// for the status event and Prometheus, and raises and clears `health` alarms: a thermal zone at or
// above temperature_alarm_c (cleared below temperature_clear_c), and a throttled clock (its cap
// below the reference, or a pinned clock running below its floor; cleared after throttle_clear_s
// without). The rules are AlarmRuleState's (hysteresis, off-delay), as for every other alarm.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "config/settings.hpp"
#include "dsp/alarm_rule.hpp"
#include "pipeline/soc_sensors.hpp"

namespace vigil {

class HealthMonitor {
 public:
  // post(type, body) sends an event (the output thread's post_event: any thread may call it).
  using Post = std::function<void(const std::string& type, nlohmann::json body)>;
  HealthMonitor(const HealthSettings& settings, Post post);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Takes the first reading (so the start's status has one), then starts the thread.
  void start();
  // Stops and joins the thread. Idempotent.
  void stop();

  // One reading and its alarms at monotonic time now_ns (the thread's step; tests call it).
  void sample(int64_t now_ns);
  // The status event's `health` object: the last reading, alarms active, counters. Any thread.
  nlohmann::json status_json() const;
  // Clocks whose cap is below their hardware maximum at start, one line each for the log
  // ("cpufreq/policy0: capped at 1.5 of 2.2 GHz"): a power mode below the highest, or throttling
  // already under way. Read after start().
  const std::vector<std::string>& start_notes() const noexcept { return start_notes_; }
  bool reference_is_hardware() const noexcept { return hardware_reference_; }

 private:
  struct Rule {
    std::unique_ptr<AlarmRuleState> state;
    bool raised = false;
  };
  bool throttled(const ClockReading& c) const;
  void evaluate(const SocReadings& r, int64_t now_ns);

  HealthSettings s_;
  Post post_;
  bool hardware_reference_ = false;
  std::map<std::string, double> start_cap_hz_;  // reference "start": each clock's first cap
  std::map<std::string, Rule> zone_rules_, clock_rules_;
  std::vector<std::string> start_notes_;
  bool first_ = true;

  mutable std::mutex mutex_;  // guards last_ (the reader's thread writes, status readers copy)
  SocReadings last_;
  std::map<std::string, bool> last_throttled_;
  std::atomic<uint64_t> readings_{0}, read_errors_{0}, alarms_raised_{0};
  std::atomic<unsigned> active_{0};

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace vigil
