#include "apps/ae_locate_command.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "config/ae_geometry_loader.hpp"
#include "dsp/ae_location.hpp"

namespace vigil {
namespace {

using nlohmann::json;

json event_json(const AeEventHits& e, const AeLocation& loc) {
  json j = {{"type", "ae_event"}, {"time_s", e.hits[0].time_s}, {"located", loc.located}};
  if (loc.located) {
    j["x_m"] = loc.position.x;
    j["y_m"] = loc.position.y;
    j["z_m"] = loc.position.z;
    j["origin_time_s"] = loc.origin_time_s;
    j["residual_m"] = loc.residual_m;
    j["residual_us"] = loc.residual_s * 1e6;
    j["inside"] = loc.inside;
  } else {
    j["why_not"] = loc.why_not;
  }
  j["hits_used"] = loc.hits_used;
  json channels = json::array(), amplitudes = json::array();
  double energy = 0;
  for (const AeArrival& h : e.hits) {
    channels.push_back(h.channel);
    amplitudes.push_back(h.amplitude);
    energy += h.energy;
  }
  j["channels"] = channels;
  j["amplitudes_db"] = amplitudes;
  j["energy_eu"] = energy;
  return j;
}

// The event object of a line: vigil-listen --json's {"kind": "event", "event": {...}}, or the
// event itself.
const json* event_of(const json& line) {
  if (line.is_object() && line.value("kind", "") == "event" && line.contains("event")) return &line["event"];
  if (line.is_object() && line.contains("type")) return &line;
  return nullptr;
}

}  // namespace

int run_ae_locate(const std::string& geometry_path, const std::string& hits_path, double rate_hz, std::ostream& out,
                  std::ostream& err) {
  const AeGeometryResult geo = load_ae_geometry_file(geometry_path);
  if (!geo.file) {
    for (const ConfigError& e : geo.errors) err << "vigil-dsp aelocate: " << format_error(geometry_path, e) << "\n";
    return 1;
  }
  std::ifstream in(hits_path);
  if (!in) {
    err << "vigil-dsp aelocate: " << hits_path << ": cannot read the file\n";
    return 1;
  }
  // The hits first (the rate may come in a start event after the first hits of a recording that
  // began mid-run), then the events in arrival order.
  struct Hit {
    uint32_t channel;
    uint64_t frame;
    double amplitude, energy;
  };
  std::vector<Hit> hits;
  uint64_t line_no = 0, other_channels = 0;
  for (std::string text; std::getline(in, text);) {
    ++line_no;
    if (text.empty()) continue;
    json line;
    try {
      line = json::parse(text);
    } catch (const json::parse_error& e) {
      err << "vigil-dsp aelocate: " << hits_path << ":" << line_no << ": not JSON (" << e.what() << ")\n";
      return 1;
    }
    const json* ev = event_of(line);
    if (ev == nullptr) continue;
    const std::string type = ev->value("type", "");
    if (type == "start" && rate_hz == 0 && ev->contains("rate_hz")) rate_hz = (*ev)["rate_hz"].get<double>();
    if (type != "ae_hit") continue;
    if (!ev->contains("channel") || !ev->contains("frame")) {
      err << "vigil-dsp aelocate: " << hits_path << ":" << line_no << ": an ae_hit without channel or frame\n";
      return 1;
    }
    const uint32_t channel = (*ev)["channel"].get<uint32_t>();
    if (channel >= geo.file->geometry.sensors.size()) {
      ++other_channels;
      continue;
    }
    hits.push_back({channel, (*ev)["frame"].get<uint64_t>(), ev->value("amplitude_db", 0.0), ev->value("energy_eu", 0.0)});
  }
  if (!(rate_hz > 0)) {
    err << "vigil-dsp aelocate: " << hits_path << ": no start event gives the sample rate; give --rate\n";
    return 2;
  }
  AeGeometry g = geo.file->geometry;
  if (!geo.file->timing_uncertainty_set) g.timing_uncertainty_s = 1.0 / rate_hz;  // arrivals are sample-exact
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.frame < b.frame; });

  AeEventBuilder builder(ae_event_definition_s(g), g.event_lockout_s);
  std::vector<AeEventHits> events;
  for (const Hit& h : hits) builder.add({h.channel, double(h.frame) / rate_hz, h.amplitude, h.energy}, events);
  builder.flush(std::numeric_limits<double>::infinity(), events);

  std::optional<AeClusterGrid> grid;
  if (geo.file->cluster_cell_m > 0) grid.emplace(geo.file->cluster_cell_m);
  uint64_t located = 0, inside = 0;
  for (const AeEventHits& e : events) {
    const AeLocation loc = locate_ae_event(g, e);
    json j = event_json(e, loc);
    if (loc.located) {
      ++located;
      inside += loc.inside;
      if (grid) {
        const AeClusterGrid::Key k = grid->add(loc.position, j["energy_eu"].get<double>());
        j["cluster"] = {k.first, k.second};
      }
    }
    out << j.dump() << "\n";
  }
  json summary = {{"type", "summary"},
                  {"rate_hz", rate_hz},
                  {"event_definition_s", ae_event_definition_s(g)},
                  {"hits", hits.size()},
                  {"hits_of_other_channels", other_channels},
                  {"events", events.size()},
                  {"located", located},
                  {"inside", inside},
                  {"not_locatable", events.size() - located},
                  {"lockout_hits", builder.lockout_hits()},
                  {"repeated_channel_hits", builder.repeated_channel_hits()}};
  if (grid) {
    json cells = json::array();
    for (const auto& [key, cell] : grid->cells())
      cells.push_back({{"cell", {key.first, key.second}}, {"events", cell.events}, {"energy_eu", cell.energy}});
    summary["cluster_cell_m"] = grid->cell_m();
    summary["clusters"] = cells;
  }
  out << summary.dump() << "\n";
  return 0;
}

}  // namespace vigil
