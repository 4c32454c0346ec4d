#include "pipeline/stream_layout.hpp"

namespace vigil {

nlohmann::json stream_layout(const Settings& settings, const std::vector<const StreamFormat*>& formats,
                             const std::vector<bool>& hits) {
  nlohmann::json outputs = nlohmann::json::array();
  for (size_t o = 0; o < settings.data_outputs.size() && o < formats.size(); ++o) {
    const DataOutputSettings& d = settings.data_outputs[o];
    const StreamFormat& f = *formats[o];
    outputs.push_back({{"index", o},
                       {"stream", d.stream},
                       {"kind", hits[o] ? "hits" : "samples"},
                       {"rate_hz", f.rate_hz / d.decimation},
                       {"decimation", d.decimation},
                       {"channels", f.channels},
                       {"bands", f.band_names}});
  }
  nlohmann::json band_rms = nlohmann::json::array();
  for (const StageSettings& s : settings.stages) {
    if (const auto* p = std::get_if<BandRmsSettings>(&s.params))
      band_rms.push_back({{"stage", s.name},
                          {"input", s.input},
                          {"window_s", p->window_s},
                          {"threshold", p->threshold},
                          {"clear_threshold", p->clear_threshold}});
  }
  // Per ae_locate stage the sensors and the cluster grid: what a map of its events needs.
  nlohmann::json ae_locate = nlohmann::json::array();
  for (const StageSettings& s : settings.stages) {
    if (const auto* p = std::get_if<AeLocateSettings>(&s.params)) {
      nlohmann::json sensors = nlohmann::json::array();
      for (const AePoint& at : p->geometry.sensors) sensors.push_back({at.x, at.y, at.z});
      ae_locate.push_back({{"stage", s.name},
                           {"location", p->geometry.kind == AeLocationKind::kLinear ? "linear" : "planar"},
                           {"sensors", std::move(sensors)},
                           {"cluster_cell_m", p->cluster_cell_m}});
    }
  }
  return {{"outputs", std::move(outputs)}, {"band_rms", std::move(band_rms)}, {"ae_locate", std::move(ae_locate)}};
}

}  // namespace vigil
