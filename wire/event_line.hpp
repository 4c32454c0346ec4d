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

// The same verdict and the same `seq` without building the tree (a SAX pass): for a listener
// that only counts the events and passes their text on, several times cheaper.
bool event_datagram_seq(const uint8_t* data, size_t size, uint64_t& seq);

// The events of one datagram, in order: the datagram as one event (any JSON layout, line breaks
// included), else, if it does not parse so, each of its lines (an output's `framing: lines`;
// empty lines skipped). parse(const uint8_t*, size_t) returns a pointer to what it read, or null
// where the text is not an event; f(const uint8_t* text, size_t bytes, that pointer) for each.
template <class Parse, class F>
void for_each_event_by(const uint8_t* data, size_t size, Parse&& parse, F&& f) {
  if (auto* ev = parse(data, size)) {
    f(data, size, ev);
    return;
  }
  for (size_t at = 0; at < size;) {
    size_t end = at;
    while (end < size && data[end] != '\n') ++end;
    if (end > at) f(data + at, end - at, parse(data + at, end - at));
    at = end + 1;
  }
}

// f(text, bytes, nlohmann::json* event): each event parsed into a tree.
template <class F>
void for_each_event(const uint8_t* data, size_t size, F&& f) {
  nlohmann::json ev;
  for_each_event_by(
      data, size, [&](const uint8_t* d, size_t n) { return parse_event_datagram(d, n, ev) ? &ev : nullptr; }, f);
}

// f(text, bytes, const uint64_t* seq): each event's seq only (event_datagram_seq).
template <class F>
void for_each_event_seq(const uint8_t* data, size_t size, F&& f) {
  uint64_t seq = 0;
  for_each_event_by(
      data, size, [&](const uint8_t* d, size_t n) -> const uint64_t* { return event_datagram_seq(d, n, seq) ? &seq : nullptr; },
      f);
}

// One human-readable line for an event (no newline): status, alarm, ae_hit, vibration and record
// events get their fields laid out, anything else its JSON.
std::string event_line(const nlohmann::json& event);

}  // namespace vigil
