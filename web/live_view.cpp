#include "web/live_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "core/rfc3339.hpp"
#include "wire/event_line.hpp"

namespace vigil::web {

using nlohmann::json;

double round_significant(double v, int digits) noexcept {
  if (!std::isfinite(v) || v == 0) return std::isfinite(v) ? 0.0 : v;
  const double a = std::fabs(v);
  if (a < 1e-15) return 0.0;
  const int p = digits - 1 - int(std::floor(std::log10(a)));
  if (p > 22 || p < -22) return v;  // outside exact powers of ten: leave it
  const double scale = std::pow(10.0, std::abs(p));
  // k / 10^p with both exact gives the double nearest the decimal, which prints as that decimal.
  return p >= 0 ? std::round(v * scale) / scale : std::round(v / scale) * scale;
}

namespace {

json rounded(const std::vector<float>& v, int digits) {
  json a = json::array();
  for (float x : v) a.push_back(round_significant(x, digits));
  return a;
}

// At most n bytes, cut at a UTF-8 character boundary, marked when cut.
std::string clipped(std::string s, size_t n) {
  if (s.size() <= n) return s;
  size_t cut = n;
  while (cut > 0 && (uint8_t(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s + "…";
}

double utc_seconds(const json& ev, const char* key) {
  int64_t ns = 0;
  const auto it = ev.find(key);
  if (it == ev.end() || !it->is_string() || !parse_rfc3339_utc(it->get<std::string>(), ns)) return 0;
  return double(ns) / 1e9;
}

// The field as a T, or the fallback when it is missing, of another type, or a number T cannot
// hold: a JSON float converted to an integer type out of its range is undefined behaviour, not an
// exception (found by fuzz_listen_event: an ae_hit whose channel was 2.2e38).
template <class T>
T field(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->get<bool>() : fallback;
  } else if constexpr (std::is_floating_point_v<T>) {
    return it->is_number() ? it->get<T>() : fallback;
  } else {
    static_assert(std::is_integral_v<T> && std::is_unsigned_v<T>, "field<>: unsigned integers, bools, floats, strings");
    constexpr uint64_t most = std::numeric_limits<T>::max();
    if (it->is_number_unsigned()) {
      const uint64_t v = it->get<uint64_t>();
      return v <= most ? T(v) : fallback;
    }
    if (it->is_number_integer()) {
      const int64_t v = it->get<int64_t>();
      return v >= 0 && uint64_t(v) <= most ? T(v) : fallback;
    }
    if (it->is_number_float()) {
      const double v = it->get<double>();
      return v >= 0 && v < std::ldexp(1.0, std::numeric_limits<T>::digits) ? T(v) : fallback;  // NaN fails both
    }
    return fallback;
  }
}

}  // namespace

void LiveView::describe(uint32_t id, Stream& s) const {
  const uint32_t output = id >> 24, band = (id >> 12) & 0xFFF, channel = id & 0xFFF;
  s.name = "stream " + vita49::stream_id_hex(id);
  s.threshold = s.clear_threshold = -1;
  s.trend_window_s = opt_.summary.trend_window_s;
  if (!layout_.is_object() || !layout_.contains("outputs") || !layout_["outputs"].is_array()) return;
  for (const json& o : layout_["outputs"]) {
    if (field<uint32_t>(o, "index", ~0u) != output) continue;
    const std::string stream = field<std::string>(o, "stream", "?");
    std::string band_name;
    if (o.contains("bands") && o["bands"].is_array() && band < o["bands"].size() && o["bands"][band].is_string())
      band_name = o["bands"][band].get<std::string>();
    s.name = stream + (band_name.empty() ? "" : " / " + band_name) + " · ch " + std::to_string(channel);
    if (field<std::string>(o, "kind", "") == "hits") s.name += " (hit waveforms)";
    if (!layout_.contains("band_rms") || !layout_["band_rms"].is_array()) return;
    for (const json& d : layout_["band_rms"]) {
      if (field<std::string>(d, "input", "") != stream) continue;
      s.threshold = field<double>(d, "threshold", -1);
      s.clear_threshold = field<double>(d, "clear_threshold", -1);
      const double w = field<double>(d, "window_s", 0);
      if (w > 0) s.trend_window_s = w;
    }
    return;
  }
}

LiveView::Stream* LiveView::stream_for(uint32_t id, double rate_hz) {
  auto it = streams_.find(id);
  if (it != streams_.end()) {
    if (it->second.summary->rate_hz() == rate_hz) return &it->second;
    streams_.erase(it);  // the rate changed (a rebuilt service): start over
  }
  if (streams_.size() >= opt_.max_streams) {
    ++packets_not_shown_;
    return nullptr;
  }
  Stream s;
  describe(id, s);
  SummaryOptions o = opt_.summary;
  o.trend_window_s = s.trend_window_s;
  o.trend_span_s = std::max(o.trend_span_s, o.trend_window_s);
  try {
    s.summary = std::make_unique<StreamSummary>(rate_hz, o);
  } catch (const std::exception&) {
    return nullptr;  // an absurd rate from the wire: not shown
  }
  return &streams_.emplace(id, std::move(s)).first->second;
}

void LiveView::on_packet(const vita49::Decoded& p, const StreamStats& stats) {
  if (p.type != vita49::PacketType::kSignalDataWithStreamId || p.samples == 0) return;
  double rate = stats.rate_hz;
  if (!(rate > 0) || rate > 1e10) return;  // no context packet yet: the time axis is unknown
  Stream* s = stream_for(p.stream_id, rate);
  if (!s) return;
  float buf[2240];
  const double t0 = double(p.ts_int) + double(p.ts_frac) * 1e-12;
  for (size_t done = 0; done < p.samples;) {
    const size_t n = std::min(p.samples - done, sizeof buf / sizeof buf[0]);
    p.copy_samples(done, n, buf);
    s->summary->add(buf, n, t0 + double(done) / rate);
    done += n;
  }
}

void LiveView::on_event(const json& ev) {
  const std::string type = field<std::string>(ev, "type", "");
  if ((type == "start" || type == "status") && ev.contains("layout") && ev["layout"].is_object()) {
    if (ev["layout"] != layout_) {
      layout_ = ev["layout"];
      for (auto& [id, s] : streams_) {  // names and thresholds; the summaries stay
        const double w = s.trend_window_s;
        describe(id, s);
        s.trend_window_s = w;
      }
    }
  }
  if (type == "status") {
    status_ = ev;
    return;  // counters, not log lines
  }
  if (type == "ae_hit") {
    ++hits_seen_;
    hits_.push_back({utc_seconds(ev, "sample_time"), double(field<uint32_t>(ev, "channel", 0)),
                     field<double>(ev, "amplitude_db", 0)});
    while (hits_.size() > opt_.max_hits) hits_.pop_front();
  }
  if (type == "ae_event") on_ae_event(ev);
  if (type == "alarm" && field<std::string>(ev, "rule", "") == "cluster") on_cluster_alarm(ev);
  // Periodic measurements, hits and AE events (drawn in their own charts) would flood the log and
  // push the alarms out of it.
  if (type == "ae_level" || type == "vibration" || type == "ae_hit" || type == "ae_event") return;
  // From a fleet (vigil-listen --nats): the rig it came from, for the page's rig selector.
  const std::string rig = field<std::string>(ev, "rig", "");
  json entry{{"seq", field<uint64_t>(ev, "seq", 0)},
             {"type", type},
             {"alarm", type == "alarm" && field<std::string>(ev, "state", "") == "raised"},
             {"text", clipped((rig.empty() ? "" : "[" + rig + "] ") + event_line(ev), 400)}};
  if (!rig.empty()) entry["rig"] = rig;
  events_.push_back(std::move(entry));
  while (events_.size() > opt_.max_events) events_.pop_front();
}

LiveView::AeMap* LiveView::ae_map_of(const json& ev) {
  const std::string stage = clipped(field<std::string>(ev, "stage", ""), 100);
  if (ae_maps_.size() >= 16 && !ae_maps_.count(stage)) return nullptr;  // bounded, whatever arrives
  return &ae_maps_[stage];
}

void LiveView::on_ae_event(const json& ev) {
  AeMap* map = ae_map_of(ev);
  if (!map) return;
  AeMap& m = *map;
  const double x = field<double>(ev, "x_m", NAN), y = field<double>(ev, "y_m", NAN);
  if (!field<bool>(ev, "located", false) || !std::isfinite(x) || !std::isfinite(y)) {
    ++m.not_located;
    return;
  }
  ++m.located;
  double db = -INFINITY;
  if (const auto a = ev.find("amplitudes_db"); a != ev.end() && a->is_array())
    for (const json& v : *a)
      if (v.is_number()) db = std::max(db, v.get<double>());
  const double t = utc_seconds(ev, "sample_time");
  newest_ae_s_ = std::max(newest_ae_s_, t);
  m.events.push_back({t, x, y, std::isfinite(db) ? db : 0.0});
  while (m.events.size() > opt_.max_ae_events) m.events.pop_front();
}

void LiveView::on_cluster_alarm(const json& ev) {
  const auto cell = ev.find("cell");
  if (cell == ev.end() || !cell->is_array() || cell->size() != 2) return;
  int64_t ij[2];
  for (size_t k = 0; k < 2; ++k) {
    const json& v = (*cell)[k];
    if (!v.is_number() || !(std::fabs(v.get<double>()) < 1e12)) return;
    ij[k] = int64_t(std::llround(v.get<double>()));
  }
  AeMap* map = ae_map_of(ev);
  if (!map) return;
  AeMap& m = *map;
  const std::string level = field<std::string>(ev, "level", "");
  if (field<std::string>(ev, "state", "") == "cleared" && level == "normal") {
    m.alarm_cells.erase({ij[0], ij[1]});
  } else if (m.alarm_cells.size() < 1000 || m.alarm_cells.count({ij[0], ij[1]})) {
    m.alarm_cells[{ij[0], ij[1]}] = clipped(level, 16);
  }
}

// Per ae_locate stage of the layout (and any other that sent events): sensors and grid from the
// layout, the located events (times relative to the newest), the cluster cells in alarm.
json LiveView::ae_maps() const {
  json maps = json::array();
  std::map<std::string, json> from_layout;
  if (const auto l = layout_.find("ae_locate"); l != layout_.end() && l->is_array())
    for (const json& st : *l)
      if (st.is_object()) from_layout[field<std::string>(st, "stage", "")] = st;
  std::vector<std::string> names;
  for (const auto& [name, st] : from_layout) names.push_back(name);
  for (const auto& [name, m] : ae_maps_)
    if (!from_layout.count(name)) names.push_back(name);
  for (const std::string& name : names) {
    json o{{"stage", name}, {"sensors", json::array()}, {"cell_m", 0}, {"location", "planar"}};
    if (const auto st = from_layout.find(name); st != from_layout.end()) {
      if (const auto s = st->second.find("sensors"); s != st->second.end() && s->is_array() && s->size() <= 1024)
        o["sensors"] = *s;
      o["cell_m"] = field<double>(st->second, "cluster_cell_m", 0);
      o["location"] = field<std::string>(st->second, "location", "planar");
    }
    json age = json::array(), x = json::array(), y = json::array(), db = json::array(), cells = json::array();
    uint64_t located = 0, not_located = 0;
    if (const auto m = ae_maps_.find(name); m != ae_maps_.end()) {
      for (const auto& e : m->second.events) {
        age.push_back(round_significant(newest_ae_s_ - e[0], 3));
        x.push_back(round_significant(e[1], 5));
        y.push_back(round_significant(e[2], 5));
        db.push_back(round_significant(e[3], 3));
      }
      for (const auto& [cell, level] : m->second.alarm_cells) cells.push_back({cell.first, cell.second, level});
      located = m->second.located;
      not_located = m->second.not_located;
    }
    o["events"] = {{"age_s", std::move(age)}, {"x", std::move(x)}, {"y", std::move(y)}, {"db", std::move(db)}};
    o["alarm_cells"] = std::move(cells);
    o["located"] = located;
    o["not_located"] = not_located;
    maps.push_back(std::move(o));
  }
  return maps;
}

json LiveView::build(const json& counters, const StreamMonitor& monitor, size_t wave_points, size_t spectrum_bytes,
                     size_t max_events) {
  json j;
  j["update"] = updates_;
  j["counters"] = counters;
  j["counters"]["packets_not_shown"] = packets_not_shown_;
  json service = json::object();
  if (status_.is_object()) {
    for (const char* k : {"uptime_s", "backend", "chunks_in", "chunks_out", "dropped_frames", "output_dropped_frames",
                          "deadline_misses", "send_errors", "events_sent", "clipped_samples", "non_finite_samples"})
      if (status_.contains(k)) service[k] = status_[k];
    if (status_.contains("latency_us") && status_["latency_us"].is_object())
      service["latency_p99_us"] = status_["latency_us"].value("p99", json());
    if (status_.contains("seq")) service["status_seq"] = status_["seq"];
  }
  j["service"] = std::move(service);
  j["events"] = json::array();
  for (size_t i = events_.size() > max_events ? events_.size() - max_events : 0; i < events_.size(); ++i)
    j["events"].push_back(events_[i]);
  json ht = json::array(), hc = json::array(), hd = json::array();
  for (const auto& h : hits_) {
    ht.push_back(h[0]);
    hc.push_back(h[1]);
    hd.push_back(round_significant(h[2], 4));
  }
  j["hits"] = {{"t", std::move(ht)}, {"ch", std::move(hc)}, {"db", std::move(hd)}};
  j["ae_maps"] = ae_maps();

  // Spectra: round robin from the cursor while they fit this update's share.
  size_t spent = 0;
  std::vector<uint32_t> ids;
  for (const auto& [id, s] : streams_) ids.push_back(id);
  std::vector<bool> with_spectrum(ids.size(), false);
  size_t start = 0;
  while (start < ids.size() && ids[start] < spectrum_cursor_) ++start;
  for (size_t k = 0; k < ids.size(); ++k) {
    const size_t i = (start + k) % ids.size();
    const StreamSummary& sum = *streams_[ids[i]].summary;
    const size_t cost = sum.spectrum_db().size() * 8 + 64;
    if (sum.spectrum_db().empty() || spent + cost > spectrum_bytes) continue;
    spent += cost;
    with_spectrum[i] = true;
    spectrum_cursor_ = ids[i] + 1;
  }
  json streams = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    Stream& s = streams_[ids[i]];
    json o{{"id", vita49::stream_id_hex(ids[i])}, {"name", s.name}, {"rate_hz", s.summary->rate_hz()}};
    const auto st = monitor.streams().find(ids[i]);
    if (st != monitor.streams().end())
      o["stats"] = {{"packets", st->second.packets}, {"samples", st->second.samples}, {"gaps", st->second.gaps},
                    {"missing", st->second.samples_missing}, {"loss_flags", st->second.sample_loss_flags}};
    const StreamSummary::Envelope e = s.summary->envelope(wave_points);
    o["wave"] = {{"t1", e.t_last_s}, {"dt", e.dt_s}, {"min", rounded(e.mn, 4)}, {"max", rounded(e.mx, 4)}};
    if (with_spectrum[i]) {
      json db = json::array();
      for (float v : s.summary->spectrum_db()) db.push_back(std::round(double(v) * 100) / 100);
      o["spec"] = {{"df", s.summary->bin_hz()}, {"db", std::move(db)}};
      s.spectrum_sent_at = updates_;
    }
    const StreamSummary::Trend t = s.summary->trend(std::clamp<size_t>(wave_points / 4, 8, 150));
    o["rms"] = {{"t1", t.t_last_s}, {"dt", t.dt_s}, {"window_s", double(s.summary->trend_samples()) / s.summary->rate_hz()},
                {"v", rounded(t.rms, 4)}};
    if (s.threshold >= 0) {
      o["rms"]["threshold"] = s.threshold;
      o["rms"]["clear_threshold"] = s.clear_threshold;
    }
    streams.push_back(std::move(o));
  }
  j["streams"] = std::move(streams);
  return j;
}

std::string LiveView::update(const json& counters, const StreamMonitor& monitor) {
  for (auto& [id, s] : streams_) s.summary->update_spectrum();
  const size_t budget = opt_.max_update_bytes;
  const size_t n = std::max<size_t>(1, streams_.size());
  size_t wave_points = std::clamp<size_t>(budget / 2 / (n * 2 * 9), 8, opt_.summary.envelope_buckets);
  size_t spectrum_bytes = budget * 3 / 10;
  const uint32_t cursor = spectrum_cursor_;
  size_t events = opt_.max_events;
  std::string text = build(counters, monitor, wave_points, spectrum_bytes, events).dump();
  for (int tries = 0; text.size() > budget && tries < 8; ++tries) {
    // Over budget (long names, long events): fewer points and spectra, then fewer log lines.
    spectrum_cursor_ = cursor;
    wave_points = std::max<size_t>(8, size_t(double(wave_points) * 0.8 * double(budget) / double(text.size())));
    spectrum_bytes /= 2;
    if (tries >= 2) events /= 2;
    text = build(counters, monitor, wave_points, spectrum_bytes, events).dump();
  }
  ++updates_;
  return text;
}

}  // namespace vigil::web
