// The service's stream layout, sent in `start` and `status` events so that a receiver (vigil-listen's
// web view) can name what it receives: per VITA 49 output the stream, its bands and channels, the
// rate sent; per band_rms detector its input stream and thresholds; per ae_locate stage its sensors
// and cluster cell (docs/PROTOCOL.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "config/settings.hpp"
#include "stages/block.hpp"

namespace vigil {

// formats[o]: lanes and rate of data output o's stream (before decimation); hits[o]: output o sends
// an ae_hits stage's waveforms instead of a continuous stream.
nlohmann::json stream_layout(const Settings& settings, const std::vector<const StreamFormat*>& formats,
                             const std::vector<bool>& hits);

}  // namespace vigil
