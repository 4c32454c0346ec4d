// The SoC's temperatures and clock limits as Linux's sysfs shows them: thermal zones
// (class/thermal/thermal_zoneN/{type,temp}), CPU frequency policies
// (devices/system/cpu/cpufreq/policyN/scaling_{cur,min,max}_freq, cpuinfo_max_freq) and devfreq
// devices such as a Jetson's GPU (class/devfreq/NAME/{cur,min,max}_freq, available_frequencies).
// Plain file reads under a root that tests point at a tree of their own. Thread: any, not the
// real-time ones (it reads files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil {

struct ThermalZoneReading {
  std::string name;  // the zone's type (e.g. GPU-therm, cpu-thermal); "-N" added when types repeat
  double temp_c = 0;
};

struct ClockReading {
  std::string name;  // "cpufreq/policy0", "devfreq/17000000.ga10b"
  std::string kind;  // cpu | gpu | other
  double cur_hz = 0;     // the clock now
  double floor_hz = 0;   // the lowest the governor may choose (scaling_min_freq, min_freq)
  double cap_hz = 0;     // the highest it may choose now: a thermal or power limit lowers it
  double hw_max_hz = 0;  // the highest the hardware has (cpuinfo_max_freq, the top available frequency)
  // Clocks pinned at their cap (floor >= cap: jetson_clocks) that run below it by more than 5 %:
  // held down by the hardware or firmware, below anything software asked for.
  bool held_below_floor() const noexcept { return floor_hz >= cap_hz && cur_hz < 0.95 * cap_hz; }
};

struct SocReadings {
  std::vector<ThermalZoneReading> zones;
  std::vector<ClockReading> clocks;
  uint64_t read_errors = 0;  // files that were there but could not be read or parsed
  bool tegra = false;        // the device tree says an NVIDIA Tegra (Jetson)
};

// One reading of everything under `root` ("/sys" on a real machine). Missing folders read as
// nothing (a machine without cpufreq, a VM without thermal zones); unreadable or malformed files
// count in read_errors and leave their item out; a zone outside -60..200 degrees C (a Jetson's
// switched-off sensors read -256 C) is left out, not counted. `tegra` from
// root/firmware/devicetree/base/compatible naming "nvidia,tegra".
SocReadings read_soc_sensors(const std::string& root);

}  // namespace vigil
