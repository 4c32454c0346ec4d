// The graph most integration tests run, written once: a FIR bank `bands` splitting the input into
// a low and (optionally) a high band at one cutoff, and a band RMS alarm over them. Each test
// sets what it measures (taps, cutoff, threshold) and adds its own stages after it.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

namespace vigil::test {

// Its settings, each with a setter that returns the graph: BandsGraph().taps(31).threshold(0.5).
class BandsGraph {
 public:
  BandsGraph& taps(uint32_t n) { taps_ = n; return *this; }
  BandsGraph& cutoff_hz(double f) { cutoff_hz_ = f; return *this; }
  BandsGraph& low_band_only() { high_band_ = false; return *this; }
  BandsGraph& form(const std::string& f) { form_ = f; return *this; }       // the FIR bank's form
  BandsGraph& level(const std::string& name) { level_ = name; return *this; }  // "": no band_rms
  BandsGraph& window_s(double s) { window_s_ = s; return *this; }           // 0: the stage's default
  BandsGraph& threshold(double t) { threshold_ = t; return *this; }

  // `stages:` entries (block style, two-space indent), for after a `stages:` line.
  std::string yaml() const {
    std::ostringstream s;
    s << "  - name: bands\n    kind: fir_bank\n    input: input\n";
    if (!form_.empty()) s << "    form: " << form_ << "\n";
    s << "    taps: " << taps_ << "\n    bands:\n      - {name: low, type: lowpass, cutoff_hz: " << cutoff_hz_ << "}\n";
    if (high_band_) s << "      - {name: high, type: highpass, cutoff_hz: " << cutoff_hz_ << "}\n";
    if (!level_.empty()) {
      s << "  - name: " << level_ << "\n    kind: band_rms\n    input: bands\n";
      if (window_s_ > 0) s << "    window_s: " << window_s_ << "\n";
      s << "    threshold: " << threshold_ << "\n";
    }
    return s.str();
  }

 private:
  uint32_t taps_ = 63;
  double cutoff_hz_ = 1000;
  bool high_band_ = true;        // a highpass band beside the lowpass one
  std::string form_;             // "": the bank's default
  std::string level_ = "alarm";
  double window_s_ = 0.05;
  double threshold_ = 0.2;
};

inline std::string bands_stages(const BandsGraph& g = {}) { return g.yaml(); }

}  // namespace vigil::test
