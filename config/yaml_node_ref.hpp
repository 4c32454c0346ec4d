// A YAML::Node passed between the config's readers without putting yaml-cpp in their headers.
#pragma once

#include <yaml-cpp/yaml.h>

namespace vigil::detail {

struct YamlNodeRef {
  const YAML::Node& node;
};

}  // namespace vigil::detail
