#include "pipeline/soc_sensors.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace vigil {
namespace {

namespace fs = std::filesystem;

enum class Read { kOk, kMissing, kBad };

// The first line of a file, trimmed.
Read read_line(const fs::path& p, std::string& out) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return Read::kMissing;
  std::ifstream f(p);
  if (!f || !std::getline(f, out)) return Read::kBad;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ' || out.back() == '\0'))
    out.pop_back();
  return Read::kOk;
}

// A whole decimal number (sysfs values: millidegrees, kHz, Hz).
Read read_number(const fs::path& p, double& out) {
  std::string text;
  const Read r = read_line(p, text);
  if (r != Read::kOk) return r;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return Read::kBad;
  out = double(v);
  return Read::kOk;
}

// Entries of `dir` whose names start with `prefix`, in a stable order (policy2 before policy10).
std::vector<fs::path> entries(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(prefix, 0) == 0) out.push_back(it->path());
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    const std::string x = a.filename().string(), y = b.filename().string();
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  return out;
}

std::string gpu_or_other(const std::string& name) {
  for (const char* gpu : {"gpu", "ga10b", "gv11b", "gp10b", "gm20b"})
    if (name.find(gpu) != std::string::npos) return "gpu";
  return "other";
}

}  // namespace

SocReadings read_soc_sensors(const std::string& root_text) {
  const fs::path root(root_text);
  SocReadings r;
  auto counted = [&r](Read how) {
    if (how == Read::kBad) ++r.read_errors;
    return how == Read::kOk;
  };

  std::map<std::string, int> types;
  std::vector<std::pair<std::string, double>> zones;
  for (const fs::path& z : entries(root / "class" / "thermal", "thermal_zone")) {
    std::string type;
    double milli = 0;
    if (!counted(read_line(z / "type", type)) || !counted(read_number(z / "temp", milli))) continue;
    const double c = milli / 1000.0;
    if (!(c >= -60.0 && c <= 200.0)) continue;  // a sensor switched off (Jetson: -256 C)
    ++types[type];
    zones.emplace_back(type, c);
  }
  std::map<std::string, int> seen;
  for (auto& [type, c] : zones) {
    const int n = ++seen[type];
    r.zones.push_back({types[type] > 1 ? type + "-" + std::to_string(n - 1) : type, c});
  }

  for (const fs::path& p : entries(root / "devices" / "system" / "cpu" / "cpufreq", "policy")) {
    ClockReading c{"cpufreq/" + p.filename().string(), "cpu"};
    double cur = 0, lo = 0, cap = 0, top = 0;
    if (!counted(read_number(p / "scaling_cur_freq", cur)) || !counted(read_number(p / "scaling_min_freq", lo)) ||
        !counted(read_number(p / "scaling_max_freq", cap)) || !counted(read_number(p / "cpuinfo_max_freq", top)))
      continue;
    c.cur_hz = cur * 1e3, c.floor_hz = lo * 1e3, c.cap_hz = cap * 1e3, c.hw_max_hz = top * 1e3;
    r.clocks.push_back(c);
  }

  for (const fs::path& d : entries(root / "class" / "devfreq", "")) {
    const std::string name = d.filename().string();
    ClockReading c{"devfreq/" + name, gpu_or_other(name)};
    if (!counted(read_number(d / "cur_freq", c.cur_hz)) || !counted(read_number(d / "min_freq", c.floor_hz)) ||
        !counted(read_number(d / "max_freq", c.cap_hz)))
      continue;
    std::string list;
    c.hw_max_hz = c.cap_hz;  // without a list of frequencies the cap is all there is to compare with
    if (read_line(d / "available_frequencies", list) == Read::kOk) {
      std::istringstream in(list);
      for (double f; in >> f;) c.hw_max_hz = std::max(c.hw_max_hz, f);
    }
    r.clocks.push_back(c);
  }

  std::ifstream compatible(root / "firmware" / "devicetree" / "base" / "compatible", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(compatible)), {});
  r.tegra = text.find("nvidia,tegra") != std::string::npos;
  return r;
}

}  // namespace vigil
