#include "config/ae_geometry_loader.hpp"

#include <yaml-cpp/yaml.h>

#include "config/yaml_node_ref.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vigil {
namespace {

const std::vector<std::string> kTopKeys = {"kind",          "velocity_m_s",         "sensors",       "event_definition_s",
                                           "definition_margin", "event_lockout_s", "timing_uncertainty_s",
                                           "cluster_cell_m"};
const std::vector<std::string> kSensorKeys = {"x_m", "y_m", "z_m"};

struct Reader {
  std::vector<ConfigError> errors;

  void error(const YAML::Mark& m, const std::string& message) { errors.push_back({m.line + 1, m.column + 1, message}); }

  bool keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) {
    if (!map.IsMap()) {
      error(map.Mark(), where + ": expected a mapping");
      return false;
    }
    MappingKeys seen;
    for (const auto& kv : map) {
      const YAML::Mark at = kv.first.Mark();
      // A key that is a list or a mapping ({[a]: 1}) has no name to check: say so, never throw.
      if (!kv.first.IsScalar()) {
        error(at, "a key in " + where + " must be a plain name, not a list or a mapping");
        continue;
      }
      const std::string key = kv.first.Scalar();
      if (const std::string twice = seen.repeat(key, at.line, at.column, where); !twice.empty()) error(at, twice);
      bool known = false;
      for (const std::string& a : allowed) known = known || a == key;
      if (known) continue;
      const std::string near = nearest_key(key, allowed);
      error(kv.first.Mark(), "unknown key '" + key + "' in " + where + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
    return true;
  }

  // A number in [lo, hi] at `key` of `map`, or `fallback` where absent.
  double number(const YAML::Node& map, const std::string& key, double lo, double hi, double fallback) {
    const YAML::Node n = map[key];
    if (!n) return fallback;
    double v = 0;
    try {
      if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "");
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      error(n.Mark(), key + ": expected a number");
      return fallback;
    }
    if (!std::isfinite(v) || v < lo || v > hi) {
      std::ostringstream msg;
      msg << key << ": " << v << " is out of range " << lo << " ... " << hi;
      error(n.Mark(), msg.str());
      return fallback;
    }
    return v;
  }
};

}  // namespace

namespace {
AeGeometryResult parse_root(const YAML::Node& root);
}

AeGeometryResult parse_ae_geometry(const std::string& yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    AeGeometryResult result;
    result.errors.push_back({e.mark.line + 1, e.mark.column + 1, "syntax error: " + e.msg});
    return result;
  }
  return parse_root(root);
}

AeGeometryResult parse_ae_geometry_node(const detail::YamlNodeRef& node) { return parse_root(node.node); }

namespace {

AeGeometryResult parse_root(const YAML::Node& root) {
  AeGeometryResult result;
  Reader r;
  if (!r.keys(root, kTopKeys, "the geometry")) {
    result.errors = r.errors;
    return result;
  }
  AeGeometryFile f;
  AeGeometry& g = f.geometry;
  if (const YAML::Node kind = root["kind"]) {
    const std::string k = kind.IsScalar() ? kind.as<std::string>() : "";
    if (k == "planar") g.kind = AeLocationKind::kPlanar;
    else if (k == "linear") g.kind = AeLocationKind::kLinear;
    else r.error(kind.Mark(), "kind: expected planar or linear, got '" + k + "'");
  } else {
    r.error(root.Mark(), "the geometry has no 'kind' (planar or linear)");
  }
  if (!root["velocity_m_s"]) r.error(root.Mark(), "the geometry has no 'velocity_m_s'");
  g.velocity_m_s = r.number(root, "velocity_m_s", 1, 20000, 3000);
  g.event_definition_s = r.number(root, "event_definition_s", 0, 10, 0);
  g.definition_margin = r.number(root, "definition_margin", 1, 100, 1.2);
  g.event_lockout_s = r.number(root, "event_lockout_s", 0, 10, 0);
  f.timing_uncertainty_set = bool(root["timing_uncertainty_s"]);
  g.timing_uncertainty_s = r.number(root, "timing_uncertainty_s", 0, 1, 0);
  f.cluster_cell_m = r.number(root, "cluster_cell_m", 0, 1e4, 0);
  const YAML::Node sensors = root["sensors"];
  if (!sensors || !sensors.IsSequence()) {
    r.error(sensors ? sensors.Mark() : root.Mark(), "sensors: expected a list of {x_m, y_m[, z_m]}, one per channel");
  } else {
    for (size_t i = 0; i < sensors.size(); ++i) {
      const YAML::Node s = sensors[i];
      const std::string where = "sensors[" + std::to_string(i) + "]";
      if (!r.keys(s, kSensorKeys, where)) continue;
      if (!s["x_m"] || !s["y_m"]) r.error(s.Mark(), where + ": needs x_m and y_m");
      g.sensors.push_back({r.number(s, "x_m", -1e6, 1e6, 0), r.number(s, "y_m", -1e6, 1e6, 0),
                           r.number(s, "z_m", -1e6, 1e6, 0)});
    }
  }
  if (r.errors.empty()) {
    try {
      validate_ae_geometry(g);
    } catch (const std::invalid_argument& e) {
      r.error(sensors.Mark(), e.what());
    }
  }
  result.errors = r.errors;
  if (result.errors.empty()) result.file = f;
  return result;
}

}  // namespace

AeGeometryResult load_ae_geometry_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    AeGeometryResult r;
    r.errors.push_back({0, 0, "cannot read the file"});
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_ae_geometry(text.str());
}

}  // namespace vigil
