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

 private:
  void key_(std::string_view key) {
    if (!first_) text_ += ',';
    first_ = false;
    string_(key);
    text_ += ':';
  }
  void string_(std::string_view v) {
    text_ += '"';
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
};

}  // namespace vigil
