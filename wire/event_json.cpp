#include "wire/event_json.hpp"

namespace vigil {

std::string EventEncoder::encode_with(const std::string& type, nlohmann::json body, int64_t utc_ns, uint64_t seq) {
  body["type"] = type;
  body["seq"] = seq;
  body["time"] = rfc3339_utc(utc_ns);
  return body.dump();
}

const std::string& EventEncoder::finish_with(std::string_view type, EventText& text, int64_t utc_ns, uint64_t seq) {
  text.field("seq", seq);
  text.time_field("time", utc_ns);
  text.field("type", type);
  text.end();
  return text.str();
}

}  // namespace vigil
