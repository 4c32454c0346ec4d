// LiveView: vigil-listen's model of what the web page shows. Fed the decoded packets and events
// the listener receives; builds one JSON update at a time (per stream: envelope, spectrum, RMS
// trend with the detector's thresholds; AE hits; the recent event log; counters) that fits a byte
// budget whatever the input rate: fewer envelope points and spectra spread over several updates
// when there are many streams. Thread: the caller's (vigil-listen's main thread).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "wire/stream_monitor.hpp"
#include "wire/vita49.hpp"
#include "web/stream_summary.hpp"

namespace vigil::web {

class LiveView {
 public:
  struct Options {
    SummaryOptions summary;
    size_t max_update_bytes = 100'000;  // per update: 1 MB/s at 10 updates/s
    size_t max_events = 40;             // the event log's length
    size_t max_hits = 400;              // AE hits shown (the newest)
    size_t max_ae_events = 300;         // located AE events on each map (the newest)
    size_t max_streams = 256;           // streams shown; packets of further ones are counted
  };
  explicit LiveView(const Options& options) : opt_(options) {}

  // A decoded data or context packet (after StreamMonitor has seen it).
  void on_packet(const vita49::Decoded& p, const StreamStats& stats);
  // A parsed event datagram (from a fleet: with "rig" added, shown in the log and kept for the
  // page's rig selector; the listener's counters then carry "fleet", the table of rigs).
  void on_event(const nlohmann::json& event);

  // The next update: `counters` (the listener's and the web server's) are included as given.
  // Never larger than max_update_bytes unless the counters and the streams' minimum (8 points
  // each) alone are: fewer envelope points, spectra and log lines are sent first.
  std::string update(const nlohmann::json& counters, const StreamMonitor& monitor);

  size_t streams() const noexcept { return streams_.size(); }
  uint64_t hits_seen() const noexcept { return hits_seen_; }
  // Data packets of streams beyond max_streams (not shown): memory stays bounded whatever arrives.
  uint64_t packets_not_shown() const noexcept { return packets_not_shown_; }

 private:
  struct Stream {
    std::unique_ptr<StreamSummary> summary;
    std::string name;
    double threshold = -1, clear_threshold = -1;  // of the band_rms detector on it, if any
    double trend_window_s = 0;
    uint64_t spectrum_sent_at = 0;  // update number of the last spectrum sent
  };
  Stream* stream_for(uint32_t id, double rate_hz);
  void describe(uint32_t id, Stream& s) const;  // name and thresholds from the layout
  nlohmann::json build(const nlohmann::json& counters, const StreamMonitor& monitor, size_t wave_points,
                       size_t spectrum_bytes, size_t max_events);

  Options opt_;
  nlohmann::json layout_;  // from the newest start/status event
  nlohmann::json status_;  // the newest status event
  std::map<uint32_t, Stream> streams_;
  std::deque<nlohmann::json> events_;  // {seq, type, alarm, text}
  std::deque<std::array<double, 3>> hits_;  // time, channel, amplitude dB_AE
  // Per ae_locate stage (by name): its located events and the cluster cells in alarm, for its map
  // (the sensors and grid come from the layout).
  struct AeMap {
    std::deque<std::array<double, 4>> events;  // time, x_m, y_m, the largest hit amplitude dB_AE
    std::map<std::pair<int64_t, int64_t>, std::string> alarm_cells;  // cell -> level
    uint64_t located = 0, not_located = 0;
  };
  AeMap* ae_map_of(const nlohmann::json& ev);  // the event's stage's map; null once 16 are kept
  void on_ae_event(const nlohmann::json& ev);
  void on_cluster_alarm(const nlohmann::json& ev);
  nlohmann::json ae_maps() const;
  std::map<std::string, AeMap> ae_maps_;
  double newest_ae_s_ = 0;  // the newest AE event's time: the map's "now" for fading
  uint64_t hits_seen_ = 0;
  uint64_t packets_not_shown_ = 0;
  uint64_t updates_ = 0;
  uint32_t spectrum_cursor_ = 0;  // round robin over streams when spectra do not all fit
};

// Rounds to `digits` significant digits so that the JSON carries no more than it shows.
double round_significant(double v, int digits) noexcept;

}  // namespace vigil::web
