// Prometheus text exposition (format 0.0.4) of a status event body: the same counters and
// histograms vigild sends as `status`, as metrics named vigil_*.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vigil {

std::string prometheus_text(const nlohmann::json& status);

}  // namespace vigil
