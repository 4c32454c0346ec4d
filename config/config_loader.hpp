// Config loading and validation: YAML text -> Settings, or a list of errors with line and column.
// Thread: main (start-up and reload); never on the real-time path.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/settings.hpp"

namespace vigil {

struct ConfigError {
  int line = 0;    // 1-based; 0 when the error has no position (file unreadable)
  int column = 0;  // 1-based
  std::string message;
};

// Where the config names a host (an output's destination, metrics.listen, a multicast output's
// interface): `vigild --check-config` looks each one up, which the loader itself does not (a reload
// must not wait on DNS).
struct HostPlace {
  enum class Use {
    kDestination,  // a name or address to send to
    kListen,       // metrics.listen: also an address of this machine
    kInterface,    // multicast_interface: an interface's IPv4 address or its name, on this machine
  };
  std::string host;   // as written, without the port
  std::string where;  // "outputs[1].destination"
  int line = 0, column = 0;
  Use use = Use::kDestination;
};

struct ConfigResult {
  std::optional<Settings> settings;  // set when errors is empty
  std::vector<ConfigError> errors;   // sorted by line, then column
  std::vector<ConfigError> warnings; // what is loaded but not as written (a recording cut short); sorted
  std::vector<HostPlace> hosts;      // sorted by line, then column
};

// Parses and validates YAML text. `path` is only recorded in Settings::path.
ConfigResult parse_config(const std::string& yaml_text, const std::string& path);

// Reads and parses a file; an unreadable file gives one error with line 0.
ConfigResult load_config_file(const std::string& path);

// "FILE:LINE:COLUMN: message" (or "FILE: message" without a position).
std::string format_error(const std::string& path, const ConfigError& e);

// The nearest of `candidates` to `word` by edit distance, or "" when none is close.
std::string nearest_key(const std::string& word, const std::vector<std::string>& candidates);

// The keys of one YAML mapping read so far. YAML forbids a key twice in one mapping, and yaml-cpp
// would quietly read the first: repeat() gives, for a key seen before, the message that says so and
// where it first was ("" for a new key). Lines and columns 0-based, as yaml-cpp's marks.
class MappingKeys {
 public:
  std::string repeat(const std::string& key, int line, int column, const std::string& where);

 private:
  std::map<std::string, std::pair<int, int>> first_;
};

}  // namespace vigil
