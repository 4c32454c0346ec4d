#include "pipeline/event_json.hpp"

namespace vigil {

std::string EventEncoder::encode(const std::string& type, nlohmann::json body, int64_t utc_ns) {
  body["type"] = type;
  body["seq"] = seq_++;
  body["time"] = rfc3339_utc(utc_ns);
  return body.dump();
}

const std::string& EventEncoder::finish(std::string_view type, EventText& text, int64_t utc_ns) {
  text.field("seq", seq_++);
  text.time_field("time", utc_ns);
  text.field("type", type);
  text.end();
  return text.str();
}

}  // namespace vigil
