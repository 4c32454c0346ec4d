// CliArgs: a small command-line parser for the apps (--name VALUE, --name=VALUE, flags), so the
// tools need no Boost.program_options library (the GPU test machine has Boost headers only).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace vigil {

class CliArgs {
 public:
  struct Option {
    std::string name;   // without the leading "--"
    bool takes_value;
    std::string help;
    std::string default_value;  // shown in help; used by get() when absent
  };

  explicit CliArgs(std::vector<Option> options) : options_(std::move(options)) {}

  // Throws std::invalid_argument naming the option for unknown options or missing values.
  void parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "-h") arg = "--help";
      if (arg.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + arg + "'");
      std::string name = arg.substr(2), value;
      bool has_inline = false;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline = true;
      }
      const Option* opt = find(name);
      if (!opt) throw std::invalid_argument("unknown option '--" + name + "' (see --help)");
      if (opt->takes_value) {
        if (!has_inline) {
          if (i + 1 >= argc) throw std::invalid_argument("--" + name + " needs a value");
          value = argv[++i];
        }
        values_[name] = value;
      } else {
        if (has_inline) throw std::invalid_argument("--" + name + " takes no value");
        values_[name] = "";
      }
    }
  }

  bool has(const std::string& name) const { return values_.count(name) > 0; }

  std::string get(const std::string& name) const {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    const Option* o = find(name);
    return o ? o->default_value : "";
  }

  // A number in [lo, hi]; throws std::invalid_argument naming the option and the range.
  double number(const std::string& name, double lo, double hi) const {
    const std::string s = get(name);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < lo || v > hi)
      throw std::invalid_argument("--" + name + " must be a number " + range(lo, hi) + ", got '" + s + "'");
    return v;
  }

  std::string help() const {
    std::string h;
    for (const Option& o : options_) {
      std::string left = "  --" + o.name + (o.takes_value ? " VALUE" : "");
      if (left.size() < 24) left.resize(24, ' ');
      h += left + " " + o.help;
      if (!o.default_value.empty()) h += " (default " + o.default_value + ")";
      h += "\n";
    }
    return h;
  }

 private:
  const Option* find(const std::string& name) const {
    for (const Option& o : options_)
      if (o.name == name) return &o;
    return nullptr;
  }
  // "in 1..28"; "above 0 (at most 1000000000000)" where the least allowed is a tiny positive number
  // (a rate, whose 1e-9 would print as 0).
  static std::string range(double lo, double hi) {
    if (lo > 0 && lo < 1e-6) return "above 0 (at most " + fmt(hi) + ")";
    return "in " + fmt(lo) + ".." + fmt(hi);
  }
  static std::string fmt(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  std::vector<Option> options_;
  std::map<std::string, std::string> values_;
};

}  // namespace vigil
