#include "wire/alarm_state.hpp"

namespace vigil {
namespace {

std::string text_of(const nlohmann::json& ev, const char* key) {
  const auto it = ev.find(key);
  if (it == ev.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

std::string alarm_key(const nlohmann::json& ev) {
  if (!ev.is_object() || text_of(ev, "type") != "alarm") return "";
  const auto state = ev.find("state");
  if (state == ev.end() || !state->is_string()) return "";
  std::string key = text_of(ev, "stage") + "/" + text_of(ev, "rule") + "/" + text_of(ev, "band") + "/" +
                    text_of(ev, "channel");
  if (ev.contains("cell")) key += "/" + text_of(ev, "cell");
  return key;
}

bool alarm_left_raised(const nlohmann::json& ev) {
  const std::string state = text_of(ev, "state"), level = text_of(ev, "level");
  if (state == "raised") return true;
  return state == "cleared" && !level.empty() && level != "normal";
}

}  // namespace vigil
