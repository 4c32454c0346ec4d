// How vigil-listen reads one event datagram and turns it into one line of text. The datagram
// comes off the network from anyone: parsing never throws, and a field of the wrong type (or a
// missing one) prints as its default instead of aborting the listener. Thread: the caller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace vigil {

// Parses a datagram as an event: a JSON object with an unsigned `seq`. False for anything else.
bool parse_event_datagram(const uint8_t* data, size_t size, nlohmann::json& event);

// The events of one datagram, in order: the datagram as one event (any JSON layout, line breaks
// included), else, if it does not parse so, each of its lines (an output's `framing: lines`;
// empty lines skipped). f(const uint8_t* text, size_t bytes, nlohmann::json* event) for each,
// with event null where the text is not an event.
template <class F>
void for_each_event(const uint8_t* data, size_t size, F&& f) {
  nlohmann::json ev;
  if (parse_event_datagram(data, size, ev)) {
    f(data, size, &ev);
    return;
  }
  for (size_t at = 0; at < size;) {
    size_t end = at;
    while (end < size && data[end] != '\n') ++end;
    if (end > at) {
      const bool ok = parse_event_datagram(data + at, end - at, ev);
      f(data + at, end - at, ok ? &ev : nullptr);
    }
    at = end + 1;
  }
}

// One human-readable line for an event (no newline): status, alarm, ae_hit, vibration and record
// events get their fields laid out, anything else its JSON.
std::string event_line(const nlohmann::json& event);

}  // namespace vigil
