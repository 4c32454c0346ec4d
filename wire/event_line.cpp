#include "wire/event_line.hpp"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace vigil {

namespace {

using nlohmann::json;

// Field readers that take any JSON: the default when the key is missing or of another type.
std::string text(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}
double number(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : 0.0;
}
bool flag(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}
uint64_t count(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer()) return it->get<int64_t>() < 0 ? 0 : uint64_t(it->get<int64_t>());
  return 0;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list a, b;
  va_start(a, fmt);
  va_copy(b, a);
  const int n = std::vsnprintf(nullptr, 0, fmt, a);
  va_end(a);
  std::string s(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, b);
  va_end(b);
  return s;
}

// " band 'b'" where the event concerns a band; nothing for the raw input (band "").
std::string band_part(const json& ev) {
  const std::string band = text(ev, "band");
  return band.empty() ? std::string() : " band '" + band + "'";
}

// A list of strings as "a, b"; other items left out.
std::string joined(const json& ev, const char* key) {
  std::string out;
  const auto it = ev.find(key);
  if (it == ev.end() || !it->is_array()) return out;
  for (const json& v : *it)
    if (v.is_string()) out += (out.empty() ? "" : ", ") + v.get<std::string>();
  return out;
}

// A list of whole numbers (channels) as "3, 0, 2"; other items left out.
std::string numbers_joined(const json& ev, const char* key) {
  std::string out;
  const auto it = ev.find(key);
  if (it == ev.end() || !it->is_array()) return out;
  for (const json& v : *it)
    if (v.is_number_unsigned()) out += (out.empty() ? "" : ", ") + std::to_string(v.get<uint64_t>());
  return out;
}

std::string reload_line(const json& ev, uint64_t seq) {
  const std::string result = text(ev, "result"), path = text(ev, "path");
  if (result == "updated")
    return format("event reload seq %" PRIu64 ": %s: updated in place from frame %" PRIu64 ", no sample lost", seq,
                  path.c_str(), count(ev, "from_frame"));
  if (result == "rebuilt")
    return format("event reload seq %" PRIu64 ": %s: pipeline rebuilt (%s)", seq, path.c_str(),
                  text(ev, "reason").c_str());
  // rejected: the first error; the rest are in --json and vigild's log.
  const auto errors = ev.find("errors");
  const size_t n = errors != ev.end() && errors->is_array() ? errors->size() : 0;
  const std::string first = n && (*errors)[0].is_string() ? (*errors)[0].get<std::string>() : std::string();
  const std::string more = n > 1 ? format(" (and %zu more)", n - 1) : std::string();
  return format("event reload seq %" PRIu64 ": %s: %s, the running config stays: %s%s", seq, path.c_str(),
                result.c_str(), first.c_str(), more.c_str());
}

// The status's `health` in brief: the hottest zone and the clocks throttled ("" without one).
std::string health_part(const json& ev) {
  const auto h = ev.find("health");
  if (h == ev.end() || !h->is_object()) return "";
  std::string out;
  const auto zones = h->find("zones");
  const json* hottest = nullptr;
  if (zones != h->end() && zones->is_array())
    for (const json& z : *zones)
      if (z.is_object() && z.contains("temp_c") && z["temp_c"].is_number() &&
          (!hottest || z["temp_c"].get<double>() > (*hottest)["temp_c"].get<double>()))
        hottest = &z;
  if (hottest) out += format(", hottest %s %.1f C", text(*hottest, "zone").c_str(), number(*hottest, "temp_c"));
  std::string throttled;
  const auto clocks = h->find("clocks");
  if (clocks != h->end() && clocks->is_array())
    for (const json& c : *clocks)
      if (c.is_object() && c.contains("throttled") && c["throttled"].is_boolean() && c["throttled"].get<bool>())
        throttled += (throttled.empty() ? "" : ", ") + text(c, "clock");
  if (!throttled.empty()) out += ", throttled: " + throttled;
  return out;
}

std::string status_line(const json& ev) {
  const auto it = ev.find("latency_us");
  const json& l = it != ev.end() && it->is_object() ? *it : json::object();
  return format("event status seq %" PRIu64 ": chunks in %" PRIu64 " out %" PRIu64 ", dropped frames %" PRIu64
                ", deadline misses %" PRIu64 ", latency p50/p99/max %" PRIu64 "/%" PRIu64 "/%" PRIu64
                " us, send errors %" PRIu64 "%s",
                count(ev, "seq"), count(ev, "chunks_in"), count(ev, "chunks_out"), count(ev, "dropped_frames"),
                count(ev, "deadline_misses"), count(l, "p50"), count(l, "p99"), count(l, "max"),
                count(ev, "send_errors"), health_part(ev).c_str());
}

// A `health` alarm: a thermal zone's temperature against its limit, or a clock's throttling.
std::string health_line(const json& ev, uint64_t seq) {
  if (text(ev, "rule") == "temperature")
    return format("event health seq %" PRIu64 ": temperature %s: %s at %.1f C (limit %.1f C)", seq,
                  text(ev, "state").c_str(), text(ev, "zone").c_str(), number(ev, "temp_c"), number(ev, "limit_c"));
  return format("event health seq %" PRIu64 ": throttling %s: %s (%s) at %.0f MHz, cap %.0f of %.0f MHz", seq,
                text(ev, "state").c_str(), text(ev, "clock").c_str(), text(ev, "kind").c_str(), number(ev, "cur_mhz"),
                number(ev, "cap_mhz"), number(ev, "max_mhz"));
}

}  // namespace

bool parse_event_datagram(const uint8_t* data, size_t size, json& event) {
  event = json::parse(data, data + size, nullptr, false);
  return !event.is_discarded() && event.is_object() && event.contains("seq") && event["seq"].is_number_unsigned();
}

namespace {

// Reads only the top level's `seq` (the last one, as the tree keeps the last of equal keys).
struct SeqReader final : nlohmann::json_sax<json> {
  int depth = 0;
  bool object = false;       // the top level is an object
  bool at_seq = false;       // the top level's value now read belongs to `seq`
  bool seq_unsigned = false;
  uint64_t seq = 0;

  bool value(bool is_unsigned, uint64_t v = 0) {
    if (depth == 1 && at_seq) {
      seq_unsigned = is_unsigned;
      seq = v;
    }
    at_seq = false;
    return true;
  }
  bool null() override { return value(false); }
  bool boolean(bool) override { return value(false); }
  bool number_integer(number_integer_t) override { return value(false); }
  bool number_unsigned(number_unsigned_t v) override { return value(true, v); }
  bool number_float(number_float_t, const string_t&) override { return value(false); }
  bool string(string_t&) override { return value(false); }
  bool binary(binary_t&) override { return value(false); }
  bool start_object(std::size_t) override {
    if (depth == 0) object = true;
    if (depth == 1) value(false);  // a nested value ends `seq`'s claim
    ++depth;
    return true;
  }
  bool key(string_t& k) override {
    if (depth == 1) at_seq = k == "seq";
    return true;
  }
  bool end_object() override {
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth == 1) value(false);
    ++depth;
    return true;
  }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

}  // namespace

bool event_datagram_seq(const uint8_t* data, size_t size, uint64_t& seq) {
  SeqReader r;
  try {
    if (!json::sax_parse(data, data + size, &r) || !r.object || !r.seq_unsigned) return false;
  } catch (const std::exception&) {  // whatever the network sends: not an event
    return false;
  }
  seq = r.seq;
  return true;
}

std::string event_line(const json& ev) {
  if (!ev.is_object()) return "event " + ev.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string type = text(ev, "type");
  const uint64_t seq = count(ev, "seq");
  if (type == "status") return status_line(ev);
  if (type == "alarm" && text(ev, "rule") == "cluster")  // an AE cluster's rate (ae_locate)
    return format("event alarm seq %" PRIu64 ": %s %s (%s) cluster at x %.4f m, y %.4f m (cell %.3g m): %s %.4g, "
                  "threshold %.4g at %s",
                  seq, text(ev, "stage").c_str(), text(ev, "state").c_str(), text(ev, "level").c_str(),
                  number(ev, "x_m"), number(ev, "y_m"), number(ev, "cell_m"), text(ev, "metric").c_str(),
                  number(ev, "value"), number(ev, "threshold"), text(ev, "sample_time").c_str());
  if (type == "alarm") {
    const std::string level = ev.contains("level") ? " (" + text(ev, "level") + ")" : "";
    return format("event alarm seq %" PRIu64 ": %s %s%s %s%s channel %" PRIu64 ": value %.4g, threshold %.4g at %s",
                  seq, text(ev, "stage").c_str(), text(ev, "state").c_str(), level.c_str(), text(ev, "rule").c_str(),
                  band_part(ev).c_str(), count(ev, "channel"), number(ev, "value"), number(ev, "threshold"),
                  text(ev, "sample_time").c_str());
  }
  if (type == "ae_hit")
    return format("event ae_hit seq %" PRIu64 ": %s%s channel %" PRIu64
                  ": %.1f dB_AE, rise %.0f us, duration %.0f us, %" PRIu64 " counts, energy %.4g eu at %s",
                  seq, text(ev, "stage").c_str(), band_part(ev).c_str(), count(ev, "channel"),
                  number(ev, "amplitude_db"), number(ev, "rise_time_us"), number(ev, "duration_us"),
                  count(ev, "counts"), number(ev, "energy_eu"), text(ev, "sample_time").c_str());
  if (type == "ae_level") {
    // asl_db is null for a silent interval.
    const auto asl = ev.find("asl_db");
    const std::string level =
        asl != ev.end() && asl->is_number() ? format("%.1f dB_AE", asl->get<double>()) : std::string("none (silent)");
    return format("event ae_level seq %" PRIu64 ": %s%s channel %" PRIu64 ": rms %.4g V, ASL %s over %.3g s to %s",
                  seq, text(ev, "stage").c_str(), band_part(ev).c_str(), count(ev, "channel"), number(ev, "rms_v"),
                  level.c_str(), number(ev, "interval_s"), text(ev, "sample_time").c_str());
  }
  if (type == "ae_event") {
    const std::string hits = format("%" PRIu64 " hits, first channel %" PRIu64 " [%s]", count(ev, "hits"),
                                    count(ev, "first_channel"), numbers_joined(ev, "channels").c_str());
    if (!flag(ev, "located"))
      return format("event ae_event seq %" PRIu64 ": %s: not located (%s), %s, energy %.4g eu at %s", seq,
                    text(ev, "stage").c_str(), text(ev, "why_not").c_str(), hits.c_str(), number(ev, "energy_eu"),
                    text(ev, "sample_time").c_str());
    std::string cluster;
    if (const auto c = ev.find("cluster"); c != ev.end() && c->is_object())
      cluster = format(", cluster of %" PRIu64, count(*c, "events"));
    return format("event ae_event seq %" PRIu64 ": %s: at x %.4f m, y %.4f m (%s), residual %.3g m, %s, energy %.4g "
                  "eu%s at %s",
                  seq, text(ev, "stage").c_str(), number(ev, "x_m"), number(ev, "y_m"),
                  flag(ev, "inside") ? "inside" : "outside the array", number(ev, "residual_m"), hits.c_str(),
                  number(ev, "energy_eu"), cluster.c_str(), text(ev, "sample_time").c_str());
  }
  if (type == "reload") return reload_line(ev, seq);
  if (type == "health") return health_line(ev, seq);
  if (type == "source")
    return format("event source seq %" PRIu64 ": %s, %" PRIu64 " frames lost, resumed at frame %" PRIu64 " (%s)", seq,
                  text(ev, "state").c_str(), count(ev, "frames_lost"), count(ev, "frame"),
                  text(ev, "sample_time").c_str());
  if (type == "overload") {
    const std::string state = text(ev, "state");
    const std::string misses =
        state == "shedding" ? format(" after %.0f deadline misses in a second", number(ev, "misses_last_s")) : "";
    return format("event overload seq %" PRIu64 ": %s optional stages [%s]%s, from frame %" PRIu64 " (%s)", seq,
                  state.c_str(), joined(ev, "stages").c_str(), misses.c_str(), count(ev, "frame"),
                  text(ev, "sample_time").c_str());
  }
  if (type == "backend")
    return format("event backend seq %" PRIu64 ": %s: %s from %s to %s at frame %" PRIu64 " (%s): %s", seq,
                  text(ev, "stage").c_str(), text(ev, "state").c_str(), text(ev, "from").c_str(),
                  text(ev, "to").c_str(), count(ev, "frame"), text(ev, "sample_time").c_str(),
                  text(ev, "error").c_str());
  if (type == "vibration") {
    const std::string zone = ev.contains("iso_zone") ? ", zone " + text(ev, "iso_zone") : "";
    const std::string velocity =
        ev.contains("velocity_rms") ? format(", velocity %.4g mm/s", number(ev, "velocity_rms")) : "";
    return format("event vibration seq %" PRIu64 ": %s%s channel %" PRIu64 ": rms %.4g, crest %.3g, kurtosis %.3g%s%s",
                  seq, text(ev, "stage").c_str(), band_part(ev).c_str(), count(ev, "channel"), number(ev, "rms"),
                  number(ev, "crest_factor"), number(ev, "kurtosis"), velocity.c_str(), zone.c_str());
  }
  if (type == "start") {
    // The layout (docs/PROTOCOL.md) is for programs; people get what it says in brief.
    const auto layout = ev.find("layout");
    uint64_t outputs = 0, streams = 0;
    if (layout != ev.end() && layout->is_object() && layout->contains("outputs") && (*layout)["outputs"].is_array()) {
      for (const json& o : (*layout)["outputs"]) {
        if (!o.is_object()) continue;
        ++outputs;
        const auto bands = o.find("bands");
        streams += count(o, "channels") * (bands != o.end() && bands->is_array() ? bands->size() : 1);
      }
    }
    return format("event start seq %" PRIu64 ": vigild %s, source at %.10g Hz, %" PRIu64 " data output%s of %" PRIu64
                  " stream%s",
                  seq, text(ev, "version").c_str(), number(ev, "rate_hz"), outputs, outputs == 1 ? "" : "s", streams,
                  streams == 1 ? "" : "s");
  }
  if (type == "record") {
    const std::string action = text(ev, "action");
    return format("event record seq %" PRIu64 ": %s %s", seq, action.c_str(),
                  text(ev, action == "stop" ? "reason" : "file").c_str());
  }
  // Invalid UTF-8 in a string would make dump() throw: replace it instead.
  return "event " + ev.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace vigil
