// Fuzz target: the config loader. Any bytes must give either Settings or a list of errors with
// line and column — never a crash, an exception out of parse_config, a leak or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const vigil::ConfigResult r = vigil::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (r.settings.has_value() == !r.errors.empty()) __builtin_trap();  // exactly one of the two
  for (const vigil::ConfigError& e : r.errors)
    if (e.message.empty()) __builtin_trap();
  return 0;
}
