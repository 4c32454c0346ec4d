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

}  // namespace vigil::test
