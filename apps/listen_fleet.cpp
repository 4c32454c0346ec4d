#include "apps/listen_fleet.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "core/clock.hpp"
#include "wire/alarm_state.hpp"
#include "wire/event_line.hpp"
#include "wire/fleet_order.hpp"
#include "wire/stream_monitor.hpp"
#if VIGIL_HAVE_WEB
#include "web/live_view.hpp"
#include "web/page_assets.hpp"
#include "web/web_server.hpp"
#endif

namespace vigil {

int listen_fleet(const FleetListenOptions& o, volatile std::sig_atomic_t* stop) {
  std::unique_ptr<FleetReader> reader;
  try {
    reader = std::make_unique<FleetReader>(o.reader);
  } catch (const std::exception& e) {
    std::cerr << "vigil-listen: --nats: " << e.what() << "\n";
    return 1;
  }
  if (!o.quiet && !o.as_json)
    std::cerr << "vigil-listen: reading stream " << o.reader.stream << " (" << o.reader.subject << ") through consumer "
              << o.reader.durable << "\n";
#if VIGIL_HAVE_WEB
  std::unique_ptr<web::WebServer> server;
  std::unique_ptr<web::LiveView> view;
  if (!o.web.empty()) {
    std::string host, why;
    uint16_t port = 0;
    if (!web::parse_listen_address(o.web, host, port, why)) {
      std::cerr << "vigil-listen: --web: " << why << "\n";
      return 2;
    }
    try {
      server = std::make_unique<web::WebServer>(host, port, web::page_assets());
    } catch (const std::exception& e) {
      std::cerr << "vigil-listen: --web: " << e.what() << "\n";
      return 1;
    }
    web::LiveView::Options vo;
    vo.max_update_bytes = o.web_max_update_bytes;
    view = std::make_unique<web::LiveView>(vo);
    std::cerr << "vigil-listen: web view on " << server->url() << "\n";
  }
#else
  if (!o.web.empty()) {
    std::cerr << "vigil-listen: --web: this build has no web view (VIGIL_WEB)\n";
    return 2;
  }
#endif
  // Per rig: the alarms raised and not cleared (wire/alarm_state.hpp), for the fleet table.
  std::map<std::string, std::set<std::string>> alarms_active;
  FleetOrder order(o.hold_s);
  uint64_t messages = 0, malformed = 0, emitted = 0;
  std::string last_malformed;
  const int64_t t0 = mono_now_ns();
  int64_t next_report = t0 + 1'000'000'000;
  const FleetOrder::Emit emit = [&](const std::string& rig, const std::string& run, uint64_t seq, std::string_view text) {
    ++emitted;
    nlohmann::json ev;
    const bool parsed = parse_event_datagram(reinterpret_cast<const uint8_t*>(text.data()), text.size(), ev) &&
                        ev.is_object();
    if (const std::string key = parsed ? alarm_key(ev) : ""; !key.empty()) {
      if (alarm_left_raised(ev)) alarms_active[rig].insert(key);
      else alarms_active[rig].erase(key);
    }
#if VIGIL_HAVE_WEB
    if (view && parsed) {
      ev["rig"] = rig;
      view->on_event(ev);
    }
#endif
    if (o.quiet) return;
    if (o.as_json) {
      std::cout << R"({"kind":"event","rig":")" << rig << R"(","run":")" << run << R"(","fleet_seq":)" << seq
                << R"(,"event":)" << text << "}\n";
      return;
    }
    if (parsed) std::printf("[%s] %s\n", rig.c_str(), event_line(ev).c_str());
  };
  // The fleet table: a row per rig.
  auto fleet_table = [&] {
    nlohmann::json rows = nlohmann::json::array();
    const int64_t now = mono_now_ns();
    for (const auto& [rig, s] : order.rigs())
      rows.push_back({{"rig", rig}, {"events", s.events}, {"gaps", s.gaps}, {"missing", s.missing},
                      {"duplicates", s.duplicates}, {"runs", s.runs},
                      {"last_seen_s_ago", std::round(double(now - s.last_seen_ns) / 1e8) / 10},
                      {"alarms_active", alarms_active[rig].size()}});
    return rows;
  };
  auto report = [&](bool final_report) {
    const double elapsed = double(mono_now_ns() - t0) / 1e9;
    if (o.quiet && !final_report) return;
    if (o.as_json) {
      nlohmann::json rigs = nlohmann::json::object();
      for (const auto& [rig, s] : order.rigs())
        rigs[rig] = {{"events", s.events}, {"gaps", s.gaps}, {"missing", s.missing}, {"duplicates", s.duplicates},
                     {"runs", s.runs}, {"held", s.held}, {"alarms_active", alarms_active[rig].size()},
                     {"last_seen_s_ago", double(mono_now_ns() - s.last_seen_ns) / 1e9}};
      std::cout << nlohmann::json{{"kind", final_report ? "summary" : "stats"}, {"elapsed_s", elapsed},
                                  {"messages", messages}, {"events", emitted}, {"malformed", malformed},
                                  {"connection", reader->state()}, {"last_error", reader->last_error()},
                                  {"rigs", rigs}}.dump()
                << std::endl;
      return;
    }
    std::printf("%s %.1f s: %llu messages, %llu events from %zu rigs, %llu malformed%s%s\n",
                final_report ? "summary" : "--", elapsed, (unsigned long long)messages, (unsigned long long)emitted,
                order.rigs().size(), (unsigned long long)malformed, reader->state() == "connected" ? "" : ", ",
                reader->state() == "connected" ? "" : reader->state().c_str());
    for (const auto& [rig, s] : order.rigs())
      std::printf("  rig %s: %llu events, gaps %llu (missing %llu), duplicates dropped %llu, runs %llu, alarms active "
                "%zu, last seen %.1f s ago\n",
                  rig.c_str(), (unsigned long long)s.events, (unsigned long long)s.gaps, (unsigned long long)s.missing,
                  (unsigned long long)s.duplicates, (unsigned long long)s.runs, alarms_active[rig].size(),
                  double(mono_now_ns() - s.last_seen_ns) / 1e9);
    std::fflush(stdout);
  };
  const StreamMonitor no_streams;  // a fleet stream carries events only
  int64_t next_web = t0;
  const int server_wait_ms = o.web.empty() ? 100 : 50;
  (void)no_streams, (void)next_web, (void)fleet_table;
  while (!*stop) {
    const int64_t now = mono_now_ns();
    if (o.seconds > 0 && now - t0 >= int64_t(o.seconds * 1e9)) break;
    if (o.max_events && emitted >= o.max_events) break;
    if (now >= next_report) {
      order.expire(now, emit);
      report(false);
      next_report += 1'000'000'000;
    }
#if VIGIL_HAVE_WEB
    if (server && now >= next_web) {
      next_web = now + int64_t(1e9 / o.web_updates);
      const web::WebCounters& wc = server->counters();
      const nlohmann::json counters{{"messages", messages}, {"events", emitted}, {"malformed", malformed},
                                    {"connection", reader->state()}, {"fleet", fleet_table()},
                                    {"web", {{"clients", wc.clients.load()}, {"updates_sent", wc.updates_sent.load()},
                                             {"updates_skipped", wc.updates_skipped.load()}}}};
      server->publish(std::make_shared<const std::string>(view->update(counters, no_streams)));
    }
#endif
    reader->fetch(256, server_wait_ms, [&](const FleetReader::Message& m) {
      ++messages;
      uint64_t seq = 0;
      std::string why;
      nlohmann::json ev;
      // Not Vigil's: counted and skipped (said once, on stderr).
      if (!parse_fleet_headers(m.rig, m.run, m.seq, seq, why) ||
          !parse_event_datagram(reinterpret_cast<const uint8_t*>(m.text.data()), m.text.size(), ev)) {
        ++malformed;
        if (why.empty()) why = "not a Vigil event (JSON object with type, seq, time)";
        if (last_malformed.empty() && !o.quiet)
          std::cerr << "vigil-listen: skipping a message on " << m.subject << ": " << why << " (counted)\n";
        last_malformed = why;
        return;
      }
      order.take(std::string(m.rig), std::string(m.run), seq, m.text, mono_now_ns(), emit);
    });
    std::fflush(stdout);
  }
  order.flush(emit);
  report(true);
  return 0;
}

}  // namespace vigil
