// Fuzz target: the JSON event encoder round trip. Any body (the input parsed as JSON when it is
// an object, else the bytes as a string field) is encoded as vigild sends it; the datagram must
// parse back to the same body plus type, seq and time.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "wire/event_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) body = nlohmann::json{{"text", text}};
  body.erase("type");
  body.erase("seq");
  body.erase("time");
  vigil::EventEncoder enc;
  std::string out;
  try {
    out = enc.encode("fuzz", body, int64_t(size) * 1'000'000'007);
  } catch (const nlohmann::json::type_error&) {
    return 0;  // invalid UTF-8 in a string: refused with an exception the output thread counts
  }
  const nlohmann::json back = nlohmann::json::parse(out, nullptr, false);
  if (back.is_discarded() || back["type"] != "fuzz" || back["seq"] != 0 || !back["time"].is_string()) __builtin_trap();
  int64_t ns = 0;
  if (!vigil::parse_rfc3339_utc(back["time"].get<std::string>(), ns) || ns != int64_t(size) * 1'000'000'007)
    __builtin_trap();
  for (const auto& [k, v] : body.items())
    if (back[k] != v && !(v.is_number_float() && std::isnan(v.get<double>()))) __builtin_trap();
  return 0;
}
