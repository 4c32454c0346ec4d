// An AE sensor geometry file (issue 52; read by `vigil-dsp aelocate`): YAML text -> AeGeometry and
// the cluster cell, or errors with line and column.
//
//   kind: planar              # or linear
//   velocity_m_s: 3000
//   sensors:                  # by channel
//     - {x_m: 0, y_m: 0}      # z_m optional
//     - {x_m: 1, y_m: 0}
//   event_definition_s: 0     # optional; 0: derived from the spacing and velocity
//   definition_margin: 1.2    # optional
//   event_lockout_s: 0.001    # optional
//   timing_uncertainty_s: 0   # optional; 0: one sample period where the rate is known
//   cluster_cell_m: 0.05      # optional; 0: no cluster counts
// Thread: main; never on the real-time path.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config_loader.hpp"
#include "dsp/ae_location.hpp"

namespace vigil {

struct AeGeometryFile {
  AeGeometry geometry;
  bool timing_uncertainty_set = false;
  double cluster_cell_m = 0;
};

namespace detail {
struct YamlNodeRef;  // a YAML::Node, for the config loader (which reads a stage's inline geometry)
}

struct AeGeometryResult {
  std::optional<AeGeometryFile> file;  // set when errors is empty
  std::vector<ConfigError> errors;
};

AeGeometryResult parse_ae_geometry(const std::string& yaml_text);
// The same from a mapping already read (a stage's `geometry:` in the config): marks are the
// config file's.
AeGeometryResult parse_ae_geometry_node(const detail::YamlNodeRef& node);
// Reads and parses a file; an unreadable file gives one error with line 0.
AeGeometryResult load_ae_geometry_file(const std::string& path);

}  // namespace vigil
