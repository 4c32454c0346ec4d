#include "apps/listen_fleet.hpp"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "wire/event_line.hpp"
#include "wire/fleet_order.hpp"

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
  FleetOrder order(o.hold_s);
  uint64_t messages = 0, malformed = 0, emitted = 0;
  std::string last_malformed;
  const int64_t t0 = mono_now_ns();
  int64_t next_report = t0 + 1'000'000'000;
  const FleetOrder::Emit emit = [&](const std::string& rig, const std::string& run, uint64_t seq, std::string_view text) {
    ++emitted;
    if (o.quiet) return;
    if (o.as_json) {
      std::cout << R"({"kind":"event","rig":")" << rig << R"(","run":")" << run << R"(","fleet_seq":)" << seq
                << R"(,"event":)" << text << "}\n";
      return;
    }
    nlohmann::json ev;
    if (parse_event_datagram(reinterpret_cast<const uint8_t*>(text.data()), text.size(), ev))
      std::printf("[%s] %s\n", rig.c_str(), event_line(ev).c_str());
  };
  auto report = [&](bool final_report) {
    const double elapsed = double(mono_now_ns() - t0) / 1e9;
    if (o.quiet && !final_report) return;
    if (o.as_json) {
      nlohmann::json rigs = nlohmann::json::object();
      for (const auto& [rig, s] : order.rigs())
        rigs[rig] = {{"events", s.events}, {"gaps", s.gaps}, {"missing", s.missing}, {"duplicates", s.duplicates},
                     {"runs", s.runs}, {"held", s.held},
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
      std::printf("  rig %s: %llu events, gaps %llu (missing %llu), duplicates dropped %llu, runs %llu, last seen "
                  "%.1f s ago\n",
                  rig.c_str(), (unsigned long long)s.events, (unsigned long long)s.gaps, (unsigned long long)s.missing,
                  (unsigned long long)s.duplicates, (unsigned long long)s.runs,
                  double(mono_now_ns() - s.last_seen_ns) / 1e9);
    std::fflush(stdout);
  };
  while (!*stop) {
    const int64_t now = mono_now_ns();
    if (o.seconds > 0 && now - t0 >= int64_t(o.seconds * 1e9)) break;
    if (o.max_events && emitted >= o.max_events) break;
    if (now >= next_report) {
      order.expire(now, emit);
      report(false);
      next_report += 1'000'000'000;
    }
    reader->fetch(256, 100, [&](const FleetReader::Message& m) {
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
