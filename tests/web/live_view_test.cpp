// LiveView: real VITA 49 packets and event JSON in, the web update out: names and thresholds from
// the layout, the log without hits, the hits, and the byte budget with many fast streams.
#include "web/live_view.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "wire/stream_id.hpp"

namespace vigil::web {
namespace {

using nlohmann::json;

// Sends `seconds` of a sine plus noise on stream `id` through a StreamMonitor and the view, as
// vigil-listen does: a context packet first, then data packets of 360 samples.
void stream(LiveView& view, StreamMonitor& mon, uint32_t id, double rate, double seconds, double freq, uint32_t seed) {
  std::vector<uint8_t> buf(9000);
  vita49::ContextPacket c;
  c.stream_id = id;
  c.ts_int = 1'800'000'000;
  c.sample_rate_hz = rate;
  vita49::Decoded d;
  ASSERT_TRUE(vita49::decode(buf.data(), vita49::encode_context(c, buf.data(), buf.size()), d));
  mon.on_packet(d);
  view.on_packet(d, mon.streams().at(id));
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 0.01f);
  const size_t total = size_t(rate * seconds);
  std::vector<float> x(360);
  uint8_t count = 0;
  for (size_t k = 0; k < total; k += 360) {
    for (size_t i = 0; i < 360; ++i) x[i] = 0.3f * float(std::sin(2 * M_PI * freq * double(k + i) / rate)) + noise(rng);
    vita49::DataPacket p;
    p.stream_id = id;
    p.packet_count = count;
    count = uint8_t((count + 1) & 0xF);
    vita49::split_ps(__int128(1'800'000'000) * 1'000'000'000'000 + __int128(double(k) / rate * 1e12), p.ts_int, p.ts_frac_ps);
    ASSERT_TRUE(vita49::decode(buf.data(), vita49::encode_data(p, x.data(), 360, buf.data(), buf.size()), d));
    mon.on_packet(d);
    view.on_packet(d, mon.streams().at(id));
  }
}

const json kLayout = json::parse(R"({
  "outputs": [
    {"index": 0, "stream": "input", "kind": "samples", "rate_hz": 51200, "decimation": 1, "channels": 2, "bands": [""]},
    {"index": 1, "stream": "bands", "kind": "samples", "rate_hz": 51200, "decimation": 1, "channels": 2,
     "bands": ["low", "mid", "high"]}],
  "band_rms": [{"stage": "band_alarm", "input": "bands", "window_s": 0.05, "threshold": 0.1, "clear_threshold": 0.08}]})");

TEST(LiveView, NamesStreamsDrawsThresholdsAndKeepsAlarmsInTheLog) {
  LiveView::Options o;
  LiveView view(o);
  StreamMonitor mon;
  view.on_event({{"type", "start"}, {"seq", 0}, {"layout", kLayout}});
  stream(view, mon, stream_id(0, 0, 1), 51200, 1.5, 3000, 1);
  stream(view, mon, stream_id(1, 1, 0), 51200, 1.5, 3000, 2);
  view.on_event({{"type", "alarm"}, {"seq", 1}, {"state", "raised"}, {"rule", "band_rms"}, {"stage", "band_alarm"},
                 {"band", "mid"}, {"channel", 0}, {"value", 0.21}, {"threshold", 0.1}});
  for (int i = 0; i < 100; ++i)  // many hits: in the hits, not in the log
    view.on_event({{"type", "ae_hit"}, {"seq", 2 + i}, {"channel", i % 2}, {"amplitude_db", 100.0 + i * 0.1},
                   {"sample_time", "2027-01-15T08:00:00.5Z"}});
  view.on_event({{"type", "status"}, {"seq", 200}, {"chunks_in", 75}, {"latency_us", {{"p99", 1400}}}});
  const json u = json::parse(view.update({{"datagrams", 42}}, mon));
  ASSERT_EQ(u["streams"].size(), 2u);
  EXPECT_EQ(u["streams"][0]["id"], "00000001");
  EXPECT_EQ(u["streams"][0]["name"], "input · ch 1");
  EXPECT_FALSE(u["streams"][0]["rms"].contains("threshold"));  // no detector on the raw input
  EXPECT_EQ(u["streams"][1]["id"], "01001000");
  EXPECT_EQ(u["streams"][1]["name"], "bands / mid · ch 0");
  EXPECT_EQ(u["streams"][1]["rms"]["threshold"], 0.1);
  EXPECT_EQ(u["streams"][1]["rms"]["clear_threshold"], 0.08);
  EXPECT_NEAR(u["streams"][1]["rms"]["window_s"].get<double>(), 0.05, 1e-9);  // the detector's window
  // RMS of 0.3·sin + noise(0.01): 0.2123.
  for (const json& v : u["streams"][1]["rms"]["v"]) EXPECT_NEAR(v.get<double>(), 0.2123, 0.003);
  // The spectrum's peak within one bin of 3000 Hz.
  const json& db = u["streams"][0]["spec"]["db"];
  size_t peak = 1;
  for (size_t k = 2; k < db.size(); ++k)
    if (db[k].get<double>() > db[peak].get<double>()) peak = k;
  EXPECT_NEAR(double(peak) * u["streams"][0]["spec"]["df"].get<double>(), 3000.0, 50.0);
  ASSERT_EQ(u["events"].size(), 2u);  // start and the alarm; no hit, no status
  EXPECT_EQ(u["events"][1]["type"], "alarm");
  EXPECT_TRUE(u["events"][1]["alarm"].get<bool>());
  EXPECT_NE(u["events"][1]["text"].get<std::string>().find("band_alarm raised"), std::string::npos);
  ASSERT_EQ(u["hits"]["t"].size(), 100u);
  EXPECT_DOUBLE_EQ(u["hits"]["t"][0].get<double>(), 1800000000.5);  // 2027-01-15T08:00:00.5Z in UTC seconds
  EXPECT_EQ(u["hits"]["ch"][1], 1.0);
  EXPECT_DOUBLE_EQ(u["hits"]["db"][99].get<double>(), 109.9);
  EXPECT_EQ(u["service"]["chunks_in"], 75);
  EXPECT_EQ(u["service"]["latency_p99_us"], 1400);
  EXPECT_EQ(u["counters"]["datagrams"], 42);
}

// vigil-listen --nats: each event carries its rig into the log (for the page's rig selector), and
// the listener's fleet table reaches the page in the counters as given.
TEST(LiveView, AFleetsEventsKeepTheirRigAndTheFleetTableGoesThrough) {
  LiveView view(LiveView::Options{});
  StreamMonitor mon;
  view.on_event({{"type", "alarm"}, {"seq", 7}, {"state", "raised"}, {"rule", "band_rms"}, {"stage", "band_alarm"},
                 {"band", "mid"}, {"channel", 2}, {"value", 0.21}, {"threshold", 0.1}, {"rig", "press7"}});
  view.on_event({{"type", "source"}, {"seq", 8}, {"state", "running"}, {"rig", "kiln_2"}});
  view.on_event({{"type", "source"}, {"seq", 9}, {"state", "running"}});  // a UDP event: no rig
  const json fleet = json::array({{{"rig", "press7"}, {"events", 10}, {"gaps", 0}, {"alarms_active", 1}},
                                  {{"rig", "kiln_2"}, {"events", 3}, {"gaps", 1}, {"alarms_active", 0}}});
  const json u = json::parse(view.update({{"fleet", fleet}}, mon));
  ASSERT_EQ(u["events"].size(), 3u);
  EXPECT_EQ(u["events"][0]["rig"], "press7");
  EXPECT_EQ(u["events"][0]["text"].get<std::string>().rfind("[press7] event alarm seq 7", 0), 0u)
      << u["events"][0]["text"];
  EXPECT_TRUE(u["events"][0]["alarm"].get<bool>());
  EXPECT_EQ(u["events"][1]["rig"], "kiln_2");
  EXPECT_FALSE(u["events"][2].contains("rig"));
  EXPECT_EQ(u["events"][2]["text"].get<std::string>().rfind("event source", 0), 0u);
  EXPECT_EQ(u["counters"]["fleet"], fleet);
}

TEST(LiveView, EveryUpdateFitsTheBudgetAndEverySpectrumComesRound) {
  LiveView::Options o;
  o.max_update_bytes = 100'000;
  LiveView view(o);
  StreamMonitor mon;
  std::set<std::string> ids;
  for (uint32_t c = 0; c < 64; ++c) stream(view, mon, stream_id(0, 0, c), 1e6, 0.05, 1000.0 * (c + 1), c);
  std::set<std::string> with_spectrum;
  size_t updates = 0;
  for (; updates < 20 && with_spectrum.size() < 64; ++updates) {
    const std::string text = view.update({{"datagrams", updates}}, mon);
    EXPECT_LE(text.size(), o.max_update_bytes);
    const json u = json::parse(text);
    ASSERT_EQ(u["streams"].size(), 64u);
    for (const json& s : u["streams"]) {
      EXPECT_GE(s["wave"]["min"].size(), 8u);
      if (s.contains("spec")) with_spectrum.insert(s["id"].get<std::string>());
    }
  }
  EXPECT_EQ(with_spectrum.size(), 64u) << "after " << updates << " updates";
  EXPECT_LE(updates, 12u);
}

TEST(LiveView, SurvivesEventsOfTheWrongShape) {
  LiveView view(LiveView::Options{});
  StreamMonitor mon;
  view.on_event({{"type", "start"}, {"seq", 0}, {"layout", {{"outputs", 5}}}});
  view.on_event({{"type", 7}, {"seq", 1}});
  view.on_event({{"type", "ae_hit"}, {"seq", 2}, {"channel", "x"}, {"sample_time", 3}});
  view.on_event({{"type", "status"}, {"seq", 3}, {"latency_us", 5}});
  // Numbers a channel cannot be (fuzz_listen_event found 2.2e38 converted to uint32_t: undefined
  // behaviour): the channel falls back to 0; a whole float in range is taken.
  view.on_event({{"type", "ae_hit"}, {"seq", 4}, {"channel", 2.2e38}});
  view.on_event({{"type", "ae_hit"}, {"seq", 5}, {"channel", -3}});
  view.on_event({{"type", "ae_hit"}, {"seq", 6}, {"channel", 5e9}});
  view.on_event({{"type", "ae_hit"}, {"seq", 7}, {"channel", 7.0}});
  stream(view, mon, stream_id(3, 2, 1), 1000, 0.5, 100, 9);  // an output the layout does not name
  const json u = json::parse(view.update(json::object(), mon));
  ASSERT_EQ(u["streams"].size(), 1u);
  EXPECT_EQ(u["streams"][0]["name"], "stream 03002001");
  ASSERT_EQ(u["hits"]["ch"].size(), 5u);
  EXPECT_EQ(u["hits"]["ch"], json::array({0.0, 0.0, 0.0, 0.0, 7.0}));
}

// The AE map: the sensors and grid from the layout, the located events (ages from the newest),
// the not located counted, the cluster cells in alarm from raise to clear; ae_events stay out of
// the log (the map draws them), the cluster alarm is in it.
TEST(LiveView, AnAeMapHasTheLayoutsSensorsTheLocatedEventsAndTheCellsInAlarm) {
  LiveView::Options o;
  o.max_ae_events = 3;
  LiveView view(o);
  StreamMonitor mon;
  view.on_event({{"type", "start"}, {"seq", 0}, {"layout", {{"outputs", json::array()}, {"band_rms", json::array()},
      {"ae_locate", {{{"stage", "plate"}, {"location", "planar"}, {"cluster_cell_m", 0.05},
                      {"sensors", {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}}}}}}}}});
  auto event = [&](uint64_t seq, double x, double y, const char* time, json amps) {
    view.on_event({{"type", "ae_event"}, {"seq", seq}, {"stage", "plate"}, {"located", true}, {"x_m", x}, {"y_m", y},
                   {"amplitudes_db", amps}, {"sample_time", time}});
  };
  event(1, 0.1, 0.2, "2026-12-05T10:00:00Z", {60.5, 70.25, 55});
  event(2, 0.63, 0.37, "2026-12-05T10:00:01.5Z", {80});
  event(3, 0.62, 0.36, "2026-12-05T10:00:02Z", {81, 79});
  event(4, 0.64, 0.38, "2026-12-05T10:00:04Z", {82});
  view.on_event({{"type", "ae_event"}, {"seq", 5}, {"stage", "plate"}, {"located", false}, {"why_not", "too few hits"}});
  view.on_event({{"type", "alarm"}, {"seq", 6}, {"stage", "plate"}, {"rule", "cluster"}, {"state", "raised"},
                 {"level", "alert"}, {"cell", {12, 7}}, {"x_m", 0.625}, {"y_m", 0.375}});
  view.on_event({{"type", "alarm"}, {"seq", 7}, {"stage", "plate"}, {"rule", "cluster"}, {"state", "raised"},
                 {"level", "danger"}, {"cell", {2, 4}}});
  json u = json::parse(view.update(json::object(), mon));
  ASSERT_EQ(u["ae_maps"].size(), 1u);
  const json& m = u["ae_maps"][0];
  EXPECT_EQ(m["stage"], "plate");
  EXPECT_EQ(m["cell_m"], 0.05);
  EXPECT_EQ(m["sensors"][2], json::array({1, 1, 0}));
  EXPECT_EQ(m["located"], 4);
  EXPECT_EQ(m["not_located"], 1);
  EXPECT_EQ(m["events"]["x"], json::array({0.63, 0.62, 0.64}));  // the newest 3
  EXPECT_EQ(m["events"]["y"], json::array({0.37, 0.36, 0.38}));
  EXPECT_EQ(m["events"]["age_s"], json::array({2.5, 2.0, 0.0}));
  EXPECT_EQ(m["events"]["db"], json::array({80.0, 81.0, 82.0}));  // each event's largest hit
  EXPECT_EQ(m["alarm_cells"], json::array({json::array({2, 4, "danger"}), json::array({12, 7, "alert"})}));
  ASSERT_EQ(u["events"].size(), 3u);  // the start and the alarms, no ae_event
  EXPECT_EQ(u["events"][0]["type"], "start");
  EXPECT_TRUE(u["events"][1]["alarm"].get<bool>());
  EXPECT_TRUE(u["events"][2]["alarm"].get<bool>());
  view.on_event({{"type", "alarm"}, {"seq", 8}, {"stage", "plate"}, {"rule", "cluster"}, {"state", "cleared"},
                 {"level", "normal"}, {"cell", {12, 7}}});
  view.on_event({{"type", "alarm"}, {"seq", 9}, {"stage", "plate"}, {"rule", "cluster"}, {"state", "cleared"},
                 {"level", "alert"}, {"cell", {2, 4}}});
  // Of the wrong shape: ignored, never thrown.
  view.on_event({{"type", "alarm"}, {"stage", "plate"}, {"rule", "cluster"}, {"state", "raised"}, {"cell", {1e300, 2}}});
  view.on_event({{"type", "alarm"}, {"stage", "plate"}, {"rule", "cluster"}, {"cell", "x"}});
  view.on_event({{"type", "ae_event"}, {"stage", 5}, {"located", "yes"}, {"x_m", "a"}, {"amplitudes_db", 3}});
  view.on_event({{"type", "ae_event"}, {"stage", "plate"}, {"located", true}, {"x_m", 0.5}, {"y_m", 0.5},
                 {"amplitudes_db", {"loud", json::object()}}});
  u = json::parse(view.update(json::object(), mon));
  ASSERT_EQ(u["ae_maps"].size(), 2u);  // and the stage "" of the event without a name
  const json& p = u["ae_maps"][0]["stage"] == "plate" ? u["ae_maps"][0] : u["ae_maps"][1];
  EXPECT_EQ(p["alarm_cells"], json::array({json::array({2, 4, "alert"})}));
  EXPECT_EQ(p["events"]["db"].back(), 0.0);
}

TEST(LiveView, ShowsAtMostMaxStreamsAndCountsTheRest) {
  LiveView::Options o;
  o.max_streams = 3;
  LiveView view(o);
  StreamMonitor mon;
  for (uint32_t c = 0; c < 5; ++c) stream(view, mon, stream_id(0, 0, c), 1000, 0.36, 50, c);  // one packet each
  const json u = json::parse(view.update(json::object(), mon));
  EXPECT_EQ(u["streams"].size(), 3u);
  EXPECT_EQ(view.packets_not_shown(), 2u);
  EXPECT_EQ(u["counters"]["packets_not_shown"], 2);
}

TEST(RoundSignificant, KeepsFourDigits) {
  EXPECT_EQ(json(round_significant(0.123456, 4)).dump(), "0.1235");
  EXPECT_EQ(json(round_significant(-98765.4, 4)).dump(), "-98770.0");
  EXPECT_EQ(json(round_significant(1.5e-7, 4)).dump(), "1.5e-07");
  EXPECT_EQ(round_significant(0, 4), 0);
}

}  // namespace
}  // namespace vigil::web
