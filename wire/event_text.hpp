// EventText: a JSON event object written straight into a reused string, for the events that come
// by the thousand a second (AE hits and levels): no tree, no allocation once the string has grown.
// Numbers as nlohmann::json writes them: integers as they are, doubles in the shortest form that
// reads back to the same double (a ".0" added where that form looks like an integer), non-finite
// doubles as null. JsonFields puts the same fields into an nlohmann::json body, so one template
// of fields serves both (describe_event and Stage::write_event). Thread: the output thread.
// Header-only.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/rfc3339.hpp"

namespace vigil {

class EventText {
 public:
  void begin() {
    text_.clear();
    text_ += '{';
    first_ = true;
  }
  void end() { text_ += '}'; }
  const std::string& str() const noexcept { return text_; }

  void field(std::string_view key, std::string_view v) {
    key_(key);
    string_(v);
  }
  void field(std::string_view key, const char* v) { field(key, std::string_view(v)); }
  void field(std::string_view key, const std::string& v) { field(key, std::string_view(v)); }
  void field(std::string_view key, bool v) {
    key_(key);
    text_ += v ? "true" : "false";
  }
  void field(std::string_view key, double v) {
    key_(key);
    if (!std::isfinite(v)) {
      text_ += "null";
      return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    const std::string_view s(buf, size_t(r.ptr - buf));
    text_ += s;
    if (s.find_first_of(".e") == std::string_view::npos) text_ += ".0";
  }
  template <typename T>
    requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  void field(std::string_view key, T v) {
    key_(key);
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    text_.append(buf, size_t(r.ptr - buf));
  }
  // A time as RFC 3339 UTC text (rfc3339_utc): nothing in it to escape.
  void time_field(std::string_view key, int64_t utc_ns) {
    key_(key);
    char buf[kRfc3339Max + 2];
    buf[0] = '"';
    const size_t n = rfc3339_utc_to(utc_ns, buf + 1);
    buf[n + 1] = '"';
    text_.append(buf, n + 2);
  }

 private:
  // Keys are the program's own names: nothing in them to escape.
  void key_(std::string_view key) {
    if (!first_) text_ += ',';
    first_ = false;
    text_ += '"';
    text_ += key;
    text_ += "\":";
  }
  static bool plain(char c) noexcept { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; }
  void string_(std::string_view v) {
    text_ += '"';
    size_t run = 0;  // the leading characters that need no escape go in one append
    while (run < v.size() && plain(v[run])) ++run;
    text_.append(v.data(), run);
    v.remove_prefix(run);
    for (const char c : v) {
      switch (c) {
        case '"': text_ += "\\\""; break;
        case '\\': text_ += "\\\\"; break;
        case '\n': text_ += "\\n"; break;
        case '\r': text_ += "\\r"; break;
        case '\t': text_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
            text_ += esc;
          } else {
            text_ += c;
          }
      }
    }
    text_ += '"';
  }

  std::string text_;
  bool first_ = true;
};

// The same fields into an nlohmann::json body.
struct JsonFields {
  nlohmann::json& body;
  template <typename T>
  void field(std::string_view key, const T& v) {
    body[std::string(key)] = v;
  }
  void field(std::string_view key, double v) {  // non-finite: null, as EventText writes it
    body[std::string(key)] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  }
  void time_field(std::string_view key, int64_t utc_ns) { body[std::string(key)] = rfc3339_utc(utc_ns); }
};

}  // namespace vigil
