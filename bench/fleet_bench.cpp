// The fleet output's costs (docs/FLEET.md, PERFORMANCE.md "Fleet"): a NatsSink publishing to a
// rig box's leaf node, the central stream read by a FleetReader (the vigil-listen --nats path).
//   --flood N: N events as fast as the output takes them; acknowledged events per second of
//              this process's CPU time (the sink's threads and the client library's).
//   --rate R --seconds S: R events a second; each event's latency from its creation (its "time",
//              as vigild writes it) to its arrival at the central consumer, p50/p99/max.
// One JSON line of results. Started by bench/fleet-bench.sh, which starts the servers.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/rfc3339.hpp"
#include "sinks/nats_sink.hpp"
#include "wire/fleet_reader.hpp"

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// An event the size of a typical ae_hit (~300 bytes), stamped now.
std::string event(uint64_t seq) {
  return R"({"type":"ae_hit","seq":)" + std::to_string(seq) + R"(,"time":")" + vigil::rfc3339_utc(vigil::utc_now_ns()) +
         R"(","stage":"ae","channel":3,"arrival":"2026-11-29T12:00:00.000000000Z","amplitude_db":84.2,)"
         R"("peak_v":0.162,"rise_us":41.0,"duration_us":1830.0,"counts":27,"counts_to_peak":5,"energy_vs":1.9e-06,)"
         R"("rms_v":0.021,"frequency_khz":12.1,"asl_db":46.0})";
}

}  // namespace

int main(int argc, char** argv) {
  std::string leaf, central, stream = "FLEET";
  uint64_t flood = 0;
  double rate = 0, seconds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--leaf") leaf = v;
    else if (k == "--central") central = v;
    else if (k == "--stream") stream = v;
    else if (k == "--flood") flood = std::stoull(v);
    else if (k == "--rate") rate = std::stod(v);
    else if (k == "--seconds") seconds = std::stod(v);
  }
  if (leaf.empty() || (!flood && (rate <= 0 || central.empty()))) {
    std::fprintf(stderr, "usage: fleet_bench --leaf URL (--flood N | --rate R --seconds S --central URL [--stream S])\n");
    return 2;
  }
  vigil::FleetOutputSettings f;
  f.servers = {leaf};
  f.rig = "bench";
  f.queue_events = 10'000'000;
  f.types = {"ae_hit"};
  vigil::SinkCounters counters;
  char run[32];
  std::snprintf(run, sizeof run, "%08x", unsigned(std::random_device{}()));
  if (flood) {
    vigil::NatsSink sink(f, run, counters);
    std::vector<std::string> texts;
    for (uint64_t i = 0; i < flood; ++i) texts.push_back(event(i));
    const double c0 = cpu_seconds();
    const int64_t t0 = vigil::mono_now_ns();
    for (uint64_t i = 0; i < flood; ++i) sink.send_event("ae_hit", texts[i]);
    const bool all = sink.wait_acknowledged(600);
    const double wall = double(vigil::mono_now_ns() - t0) / 1e9, cpu = cpu_seconds() - c0;
    std::printf("%s\n", nlohmann::json{{"mode", "flood"}, {"events", flood}, {"all_acknowledged", all},
                                       {"wall_s", wall}, {"cpu_s", cpu}, {"events_per_s", double(flood) / wall},
                                       {"events_per_cpu_s", double(flood) / cpu}}
                            .dump()
                            .c_str());
    return all ? 0 : 1;
  }
  vigil::FleetReaderOptions ro;
  ro.servers = {central};
  ro.stream = stream;
  ro.subject = "vigil.bench.>";
  ro.durable = std::string("bench") + run;
  vigil::FleetReader reader(ro);
  while (reader.fetch(512, 200, [](const vigil::FleetReader::Message&) {})) {
  }  // what earlier runs left
  std::vector<double> latency_us;
  std::atomic<bool> done{false}, warm{false};
  const uint64_t total = uint64_t(rate * seconds);
  // Warm-up: events until the first reaches the central consumer (the central stream's source
  // of the leaf connects some seconds after the stream is made); not measured.
  const std::string warm_run = std::string(run) + "w";
  std::thread rx([&] {
    while (latency_us.size() < total && !done)
      reader.fetch(512, 200, [&](const vigil::FleetReader::Message& m) {
        if (m.run == warm_run) warm = true;
        if (m.run != run) return;
        const int64_t now = vigil::utc_now_ns();
        const size_t at = m.text.find(R"("time":")");
        if (at == std::string_view::npos) return;
        const std::string_view rest = m.text.substr(at + 8);
        int64_t sent = 0;
        if (vigil::parse_rfc3339_utc(std::string(rest.substr(0, rest.find('"'))), sent))
          latency_us.push_back(double(now - sent) / 1e3);
      });
  });
  {
    vigil::NatsSink warm_sink(f, warm_run, counters);
    for (uint64_t i = 0; !warm && i < 1200; ++i) {  // up to 2 minutes
      warm_sink.send_event("ae_hit", event(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the rest of the warm-up arrives
  {
    vigil::NatsSink sink(f, run, counters);
    const int64_t t0 = vigil::mono_now_ns(), period = int64_t(1e9 / rate);
    for (uint64_t i = 0; i < total; ++i) {
      const int64_t due = t0 + int64_t(i) * period;
      while (vigil::mono_now_ns() < due) std::this_thread::sleep_for(std::chrono::microseconds(50));
      sink.send_event("ae_hit", event(i));
    }
    sink.wait_acknowledged(60);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (latency_us.size() < total && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
  }
  rx.join();
  std::vector<double> l = latency_us;
  std::sort(l.begin(), l.end());
  auto q = [&](double p) { return l.empty() ? 0.0 : l[std::min(l.size() - 1, size_t(p * double(l.size())))]; };
  std::printf("%s\n", nlohmann::json{{"mode", "latency"}, {"rate_per_s", rate}, {"events", total},
                                     {"received", l.size()}, {"p50_us", q(0.5)}, {"p99_us", q(0.99)},
                                     {"max_us", l.empty() ? 0.0 : l.back()}}
                          .dump()
                          .c_str());
  return l.size() == total ? 0 : 1;
}
