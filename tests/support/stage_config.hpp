// A stage's settings from a few lines of config, read by the real loader: for the stage tests that
// build stages through the factory. A config mistake fails the test with its line and column.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "config/config_loader.hpp"

namespace vigil::test {

// The last stage of `stage_yaml` (list entries under `stages:`), under a source of `source` keys
// ("rate_hz: 48000, channels: 7") with 1024-frame chunks.
inline StageSettings stage_of(const std::string& stage_yaml, const std::string& source) {
  const std::string text = "source: {" + source + ", chunk_frames: 1024}\nstages:\n" + stage_yaml;
  const ConfigResult cfg = parse_config(text, "split.yaml");
  if (!cfg.settings) {
    ADD_FAILURE() << format_error("split.yaml", cfg.errors[0]);
    return {};
  }
  return cfg.settings->stages.back();
}

// The bank the split tests share, as a stage entry named `bands` reading `input`: `taps` taps,
// two bands (low and high of 3 kHz); form: the `form` key's value, or "" for its default.
inline std::string two_band_bank(int taps, const std::string& form = "") {
  return "  - name: bands\n    kind: fir_bank\n    input: input\n    taps: " + std::to_string(taps) + "\n" +
         (form.empty() ? "" : "    form: " + form + "\n") +
         "    bands:\n      - {name: low, type: lowpass, cutoff_hz: 3000}\n"
         "      - {name: high, type: highpass, cutoff_hz: 3000}\n";
}

}  // namespace vigil::test
