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

// One human-readable line for an event (no newline): status, alarm, ae_hit, vibration and record
// events get their fields laid out, anything else its JSON.
std::string event_line(const nlohmann::json& event);

}  // namespace vigil
