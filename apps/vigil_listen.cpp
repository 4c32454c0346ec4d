// vigil-listen: receives vigild's VITA 49 data and JSON events over UDP, prints events and
// per-second stream statistics (packets, samples/s, gaps), optionally records each stream, and
// with --web serves a live view of it all to browsers (web/).
#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "apps/cli_args.hpp"
#include "wire/endpoint.hpp"
#include "wire/event_json.hpp"
#include "wire/event_line.hpp"
#include "wire/stream_monitor.hpp"
#include "wire/udp_gro.hpp"
#include "wire/udp_receiver.hpp"
#include "wire/vita49.hpp"
#include "wire/vrl_frame.hpp"
#if VIGIL_HAVE_NATS
#include "apps/listen_fleet.hpp"
#endif
#if VIGIL_HAVE_WEB
#include <boost/asio/ip/address.hpp>

#include "web/live_view.hpp"
#include "web/page_assets.hpp"
#include "web/web_server.hpp"
#endif

using nlohmann::json;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// "ADDR:PORT", "[V6ADDR]:PORT": the sender of an event, which its sequence is counted per.
std::string sender_text(const sockaddr_storage& from) {
  char addr[INET6_ADDRSTRLEN] = {};
  if (from.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(from);
    inet_ntop(AF_INET6, &a.sin6_addr, addr, sizeof addr);
    return vigil::format_endpoint({addr, ntohs(a.sin6_port)});
  }
  const auto& a = reinterpret_cast<const sockaddr_in&>(from);
  inet_ntop(AF_INET, &a.sin_addr, addr, sizeof addr);
  return vigil::format_endpoint({addr, ntohs(a.sin_port)});
}

using vigil::vita49::stream_id_hex;

// --record: each data stream's samples in arrival order, and a sidecar that says where they lie
// in time: a segment (its first sample in the file and that sample's timestamp) from the start
// and from each break in the time line (a hole, an overlap), so that no sample after a loss is
// placed at the wrong time by whoever reads the file.
struct Recorder {
  std::filesystem::path dir;
  struct Stream {
    std::ofstream file;
    uint64_t samples = 0;  // written so far
    uint64_t breaks = 0;   // the monitor's count when the last segment began
    json segments = json::array();
  };
  std::map<uint32_t, Stream> streams;

  // p: a data packet the monitor has just accounted (s: its stream's stats).
  void write(const vigil::vita49::Decoded& p, const vigil::StreamStats& s) {
    auto it = streams.find(p.stream_id);
    if (it == streams.end()) {
      it = streams.emplace(p.stream_id, Stream{}).first;
      it->second.file.open(dir / ("stream-" + stream_id_hex(p.stream_id) + ".f32"), std::ios::binary | std::ios::trunc);
      it->second.breaks = s.breaks;
      add_segment(it->second, p);
    } else if (s.breaks != it->second.breaks) {
      it->second.breaks = s.breaks;
      add_segment(it->second, p);
    }
    float buf[2240];  // host order; written little-endian on x86-64 and aarch64
    for (size_t done = 0; done < p.samples;) {
      const size_t n = std::min(p.samples - done, sizeof buf / sizeof buf[0]);
      p.copy_samples(done, n, buf);
      it->second.file.write(reinterpret_cast<const char*>(buf), std::streamsize(n * sizeof(float)));
      done += n;
    }
    it->second.samples += p.samples;
  }

  void write_sidecars(const vigil::StreamMonitor& mon) {
    for (const auto& [id, s] : mon.streams()) {
      const auto it = streams.find(id);
      if (it == streams.end()) continue;
      it->second.file.flush();
      json j = {{"stream_id", id},
                {"stream_id_hex", stream_id_hex(id)},
                {"data_file", "stream-" + stream_id_hex(id) + ".f32"},
                {"format", "float32le"},
                {"rate_hz", s.rate_hz},
                {"samples", it->second.samples},
                {"packets", s.packets},
                {"gaps", s.gaps},
                {"samples_missing", s.samples_missing},
                {"holes", s.holes},
                {"samples_overlapping", s.samples_overlapping},
                {"overlaps", s.overlaps},
                {"timestamp_errors", s.timestamp_errors},
                {"time_steps", s.time_steps},
                {"first_timestamp", timestamp(s.first_ts_int, s.first_ts_frac_ps)},
                {"first_ts_int", s.first_ts_int},
                {"first_ts_frac_ps", s.first_ts_frac_ps},
                {"segments", it->second.segments}};
      std::ofstream(dir / ("stream-" + stream_id_hex(id) + ".json"), std::ios::trunc) << j.dump(1) << "\n";
    }
  }

 private:
  // A VITA 49 timestamp (UTC seconds, picoseconds) as RFC 3339 text.
  static std::string timestamp(uint32_t ts_int, uint64_t ts_frac_ps) {
    return vigil::rfc3339_utc(int64_t(ts_int) * 1'000'000'000 + int64_t(ts_frac_ps / 1000));
  }
  static void add_segment(Stream& st, const vigil::vita49::Decoded& p) {
    st.segments.push_back({{"sample", st.samples},
                           {"timestamp", timestamp(p.ts_int, p.ts_frac)},
                           {"ts_int", p.ts_int},
                           {"ts_frac_ps", p.ts_frac}});
  }
};

#if VIGIL_HAVE_NATS
// "a,b,c" -> {a, b, c}; "" -> {}.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (size_t at = 0; at < text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    items.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}
#endif

// --nats: the fleet's stream instead of the UDP ports.
int listen_fleet_mode(const vigil::CliArgs& args, bool as_json, bool quiet, double seconds, uint64_t max_count) {
#if VIGIL_HAVE_NATS
  vigil::FleetListenOptions o;
  for (const std::string& url : comma_list(args.get("nats")))
    o.reader.servers.push_back(url.find("://") == std::string::npos ? "nats://" + url : url);
  o.reader.stream = args.get("stream");
  o.reader.subject = args.has("rig") ? "vigil." + args.get("rig") + ".>" : args.get("subject");
  o.reader.durable = args.get("durable");
  o.reader.ca = args.get("nats-ca");
  o.reader.creds = args.get("nats-creds");
  o.reader.user = args.get("nats-user");
  if (const char* pw = std::getenv("VIGIL_NATS_PASSWORD")) o.reader.password = pw;
  if (args.has("since") && !vigil::parse_rfc3339_utc(args.get("since"), o.reader.since_utc_ns)) {
    std::cerr << "vigil-listen: --since: expected an RFC 3339 UTC time (2026-11-29T12:00:00Z), got '"
              << args.get("since") << "'\n";
    return 2;
  }
  try {
    o.hold_s = args.number("hold-s", 0, 3600);
  } catch (const std::exception& e) {
    std::cerr << "vigil-listen: " << e.what() << "\n";
    return 2;
  }
  if (args.has("create-fleet-stream")) {
    const std::vector<std::string> domains = comma_list(args.get("source-domains"));
    if (domains.empty()) {
      std::cerr << "vigil-listen: --create-fleet-stream needs --source-domains (the rig boxes' JetStream domains)\n";
      return 2;
    }
    try {
      std::cout << vigil::create_fleet_stream(o.reader, args.get("create-fleet-stream"), domains, o.reader.stream,
                                              int(args.number("replicas", 1, 5)))
                << "\n";
    } catch (const std::exception& e) {
      std::cerr << "vigil-listen: --create-fleet-stream: " << e.what() << "\n";
      return 1;
    }
    return 0;
  }
  o.as_json = as_json;
  o.quiet = quiet;
  o.seconds = seconds;
  o.web = args.get("web");
  try {
    o.web_updates = args.number("web-updates", 0.1, 60);
    o.web_max_update_bytes = size_t(0.9 * args.number("web-kb-per-s", 1, 1e6) * 1000 / o.web_updates);
  } catch (const std::exception& e) {
    std::cerr << "vigil-listen: " << e.what() << "\n";
    return 2;
  }
  o.max_events = max_count;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  return vigil::listen_fleet(o, &g_stop);
#else
  (void)args, (void)as_json, (void)quiet, (void)seconds, (void)max_count;
  std::cerr << "vigil-listen: --nats: this build has no NATS client (libnats-dev; VIGIL_NATS)\n";
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  vigil::CliArgs args({
      {"help", false, "show this help", ""},
      {"bind", true, "address to listen on: IPv4, IPv6 (:: takes both) or a name; a multicast group is joined",
       "127.0.0.1"},
      {"interface", true,
       "with a multicast --bind: the interface to join on (IPv4 address or name; default: the route's)", ""},
      {"data-port", true, "UDP port of VITA 49 data (0: none)", "4991"},
      {"event-port", true, "UDP port of JSON events (0: none)", "4992"},
      {"json", false, "print machine-readable JSON lines instead of text", ""},
      {"record", true,
       "write each data stream to DIR/stream-ID.f32 with a JSON sidecar (rate; a segment, with the "
       "timestamp of its first sample, from the start and from each hole or overlap)",
       ""},
      {"count", true, "stop after N datagrams (data and events; 0: no limit)", "0"},
      {"seconds", true, "stop after S seconds (0: run until a signal)", "0"},
      {"quiet", false, "print only the final summary", ""},
      {"busy-poll", false, "look at the sockets without sleeping (a core busy): a sender on this host then never wakes this process", ""},
      {"gro", false,
       "take each UDP GSO send as one receive (UDP_GRO): less CPU here and for a sender on this host; the "
       "kernel's drop count then counts receives, not datagrams (the gaps still count each packet lost)",
       ""},
      {"buffer-kib", true, "receive buffer per socket in KiB (drops when it overflows are counted)", "16384"},
      {"web", true, "serve a live view at HOST:PORT (e.g. 127.0.0.1:8080; port 0 picks one)", ""},
      {"web-kb-per-s", true, "most the web view sends each browser, kB/s (1 kB = 1000 bytes)", "1000"},
      {"web-updates", true, "web view updates per second", "10"},
      {"web-fft", true, "web view spectrum size (power of two; bins of rate/N Hz)", "1024"},
      {"web-window-s", true, "web view waveform span, seconds of signal", "1"},
      {"web-max-streams", true, "streams the web view shows (packets of more are counted; ~40 KB each)", "256"},
      {"nats", true, "read the fleet's events from NATS JetStream at URL[,URL...] instead of UDP (docs/FLEET.md)", ""},
      {"stream", true, "with --nats: the stream to read", "VIGIL"},
      {"rig", true, "with --nats: only this rig's events (subjects vigil.RIG.>)", ""},
      {"subject", true, "with --nats: the subjects to read", "vigil.>"},
      {"since", true, "with --nats: from this UTC time on (RFC 3339; a new consumer only)", ""},
      {"durable", true, "with --nats: the durable consumer (a second run resumes where this one stopped)",
       "vigil-listen"},
      {"hold-s", true, "with --nats: how long an early event waits for those before it (then: a gap)", "5"},
      {"nats-ca", true, "with --nats: the CA certificate to trust (TLS)", ""},
      {"nats-creds", true, "with --nats: a NATS credentials file", ""},
      {"nats-user", true, "with --nats: user name (the password from $VIGIL_NATS_PASSWORD)", ""},
      {"create-fleet-stream", true,
       "with --nats: create (or update) the central stream NAME that sources --stream from each of "
       "--source-domains, and the central vigil_rigs bucket that sources theirs, then exit", ""},
      {"source-domains", true, "with --create-fleet-stream: the rig boxes' JetStream domains (edge1,edge2,...)", ""},
      {"replicas", true, "with --create-fleet-stream: copies of the central stream (1, 3 or 5)", "3"},
  });
  uint64_t max_count = 0;
  double seconds = 0;
  uint16_t data_port = 0, event_port = 0;
  int buffer_bytes = 0;
  [[maybe_unused]] double web_kb_per_s = 0, web_updates = 0, web_window_s = 0;  // read only with the web view
  [[maybe_unused]] size_t web_fft = 0, web_max_streams = 0;
  try {
    args.parse(argc, argv);
    max_count = uint64_t(args.number("count", 0, 1e18));
    seconds = args.number("seconds", 0, 1e9);
    data_port = uint16_t(args.number("data-port", 0, 65535));
    event_port = uint16_t(args.number("event-port", 0, 65535));
    buffer_bytes = int(args.number("buffer-kib", 4, 1 << 20)) * 1024;
    web_kb_per_s = args.number("web-kb-per-s", 1, 1e6);
    web_updates = args.number("web-updates", 0.1, 60);
    web_window_s = args.number("web-window-s", 0.001, 3600);
    web_fft = size_t(args.number("web-fft", 16, 65536));
    web_max_streams = size_t(args.number("web-max-streams", 1, 4096));
    if (web_fft & (web_fft - 1)) throw std::invalid_argument("--web-fft must be a power of two, got " + args.get("web-fft"));
  } catch (const std::exception& e) {
    std::cerr << "vigil-listen: " << e.what() << "\n";
    return 2;
  }
  if (args.has("help")) {
    std::cout << "usage: vigil-listen [--data-port P] [--event-port P] [--json] [--record DIR] [--seconds S]\n\n"
              << "Receives vigild's VITA 49 data and JSON events; prints events and per-second stream\n"
              << "statistics (packets, samples/s, gaps by the VITA packet counter and the event seq).\n\n"
              << args.help();
    return 0;
  }
  const bool as_json = args.has("json");
  const bool quiet = args.has("quiet");
  if (args.has("nats")) return listen_fleet_mode(args, as_json, quiet, seconds, max_count);
  // On loopback a datagram is delivered inside the sender's send call, and waking a receiver that
  // sleeps in poll() is part of that call: a benchmark of the sender (scripts/bench-scenarios.sh
  // --busy-poll) would count this process's wake-up as the sender's. Busy-polling, it never sleeps.
  const bool busy_poll = args.has("busy-poll");
  // A sender's GSO send (vigild sends runs of equal datagrams so) arrives as one receive: on
  // loopback it is then delivered whole, not cut into datagrams inside the sender's system call.
  const bool want_gro = args.has("gro");
  bool gro = want_gro;

  Recorder recorder;
  if (args.has("record")) {
    recorder.dir = args.get("record");
    std::error_code ec;
    std::filesystem::create_directories(recorder.dir, ec);
    if (ec) {
      std::cerr << "vigil-listen: --record " << recorder.dir << ": " << ec.message() << "\n";
      return 2;
    }
  }

  std::vector<pollfd> fds;
  std::string why;
  int data_fd = -1, event_fd = -1;
  const std::string bind_addr = args.get("bind"), interface = args.get("interface");
  if (uint16_t p = data_port) {
    if ((data_fd = vigil::open_udp_receiver(bind_addr, p, buffer_bytes, interface, why)) < 0) {
      std::cerr << "vigil-listen: data port: " << why << "\n";
      return data_fd == -2 ? 2 : 1;
    }
    fds.push_back({data_fd, POLLIN, 0});
    if (want_gro) gro = vigil::enable_udp_gro(data_fd) && gro;
  }
  if (uint16_t p = event_port) {
    if ((event_fd = vigil::open_udp_receiver(bind_addr, p, buffer_bytes, interface, why)) < 0) {
      std::cerr << "vigil-listen: event port: " << why << "\n";
      return event_fd == -2 ? 2 : 1;
    }
    fds.push_back({event_fd, POLLIN, 0});
    if (want_gro) gro = vigil::enable_udp_gro(event_fd) && gro;
  }
  if (fds.empty()) {
    std::cerr << "vigil-listen: nothing to listen on (both ports 0)\n";
    return 2;
  }
  if (want_gro && !gro)
    std::cerr << "vigil-listen: --gro: this kernel has no UDP_GRO (Linux 5.0 or later); receiving datagram by datagram\n";
#if VIGIL_HAVE_WEB
  std::unique_ptr<vigil::web::WebServer> web;
  std::unique_ptr<vigil::web::LiveView> view;
  if (args.has("web")) {
    std::string host, why_web;
    uint16_t port = 0;
    if (!vigil::web::parse_listen_address(args.get("web"), host, port, why_web)) {
      std::cerr << "vigil-listen: --web: " << why_web << "\n";
      return 2;
    }
    try {
      web = std::make_unique<vigil::web::WebServer>(host, port, vigil::web::page_assets());
    } catch (const std::exception& e) {
      std::cerr << "vigil-listen: --web: " << e.what() << "\n";
      return 1;
    }
    vigil::web::LiveView::Options o;
    o.summary.fft_size = web_fft;
    o.summary.window_s = web_window_s;
    // 90 %: an update a little late and the next on time must still keep within the rate.
    o.max_update_bytes = size_t(0.9 * web_kb_per_s * 1000 / web_updates);
    o.max_streams = web_max_streams;
    view = std::make_unique<vigil::web::LiveView>(o);
    std::cerr << "vigil-listen: web view on " << web->url() << "\n";
    boost::system::error_code ec;
    if (!boost::asio::ip::make_address(host, ec).is_loopback())
      std::cerr << "vigil-listen: --web " << host << " is not loopback: anyone who reaches this machine can watch "
                << "(there is no login; prefer 127.0.0.1 and an SSH tunnel)\n";
  }
#else
  if (args.has("web")) {
    std::cerr << "vigil-listen: --web: this build has no web view (configured without npm or Boost.Beast: VIGIL_WEB)\n";
    return 2;
  }
#endif
  // The text view and the web view read each event's fields; the rest needs only its seq.
#if VIGIL_HAVE_WEB
  const bool needs_tree = (!quiet && !as_json) || view != nullptr;
#else
  const bool needs_tree = !quiet && !as_json;
#endif
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (!quiet && !as_json) {
    std::cerr << "vigil-listen: data on " << vigil::format_endpoint({bind_addr, data_port}) << ", events on "
              << vigil::format_endpoint({bind_addr, event_port})
              << (interface.empty() ? "" : " (the group joined on " + interface + ")") << "\n";
  }

  vigil::StreamMonitor mon;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> last_tick;  // packets, samples at the last report
  std::vector<uint8_t> buf(65536);
  uint64_t datagrams = 0, malformed = 0, bad_events = 0;
  uint64_t data_datagrams = 0, vrl_frames = 0;
  uint64_t receives = 0;  // recvmsg calls that returned data: fewer than datagrams with --gro
  uint32_t data_kernel_drops = 0, event_kernel_drops = 0;  // SO_RXQ_OVFL: cumulative per socket
  const int64_t t0 = vigil::mono_now_ns();
  int64_t next_report = t0 + 1'000'000'000;
  int64_t last_report = t0;

  auto report = [&](bool final_report) {
    const int64_t now = vigil::mono_now_ns();
    const double dt = double(now - last_report) / 1e9;
    last_report = now;
    json streams = json::array();
    for (const auto& [id, s] : mon.streams()) {
      auto& [lp, ls] = last_tick[id];
      const double sps = dt > 0 ? double(s.samples - ls) / dt : 0.0;
      streams.push_back({{"stream_id", id}, {"packets", s.packets}, {"samples", s.samples},
                         {"samples_per_s", final_report ? 0.0 : sps}, {"gaps", s.gaps},
                         {"timestamp_errors", s.timestamp_errors}, {"sample_loss_flags", s.sample_loss_flags},
                         {"samples_missing", s.samples_missing}, {"holes", s.holes},
                         {"samples_overlapping", s.samples_overlapping}, {"overlaps", s.overlaps},
                         {"time_steps", s.time_steps}, {"rate_hz", s.rate_hz}, {"new_packets", s.packets - lp}});
      lp = s.packets;
      ls = s.samples;
    }
    if (!recorder.dir.empty()) recorder.write_sidecars(mon);
    if (quiet && !final_report) return;
    if (as_json) {
      std::cout << json{{"kind", final_report ? "summary" : "stats"}, {"elapsed_s", double(now - t0) / 1e9},
                        {"datagrams", datagrams}, {"data_datagrams", data_datagrams}, {"vrl_frames", vrl_frames},
                        {"receives", receives}, {"gro", gro},
                        {"malformed", malformed},
                        {"kernel_drops", {{"data", data_kernel_drops}, {"events", event_kernel_drops}}},
                        {"events", mon.events()},
                        {"event_gaps", mon.event_gaps()}, {"streams", streams}}.dump()
                << std::endl;
      return;
    }
    std::printf("%s %.1f s: %llu datagrams, %llu events (%llu seq gaps), %llu malformed, %llu dropped by the kernel "
                "(receive buffer full%s)\n",
                final_report ? "summary" : "--", double(now - t0) / 1e9, (unsigned long long)datagrams,
                (unsigned long long)mon.events(), (unsigned long long)mon.event_gaps(), (unsigned long long)malformed,
                (unsigned long long)(uint64_t(data_kernel_drops) + event_kernel_drops), gro ? "; --gro: receives, not datagrams" : "");
    for (const json& s : streams) {
      // Overlaps only where there are any: they are rare (a stream restarted with a longer delay).
      const uint64_t overlaps = s["overlaps"].get<uint64_t>();
      std::string repeated = overlaps ? ", repeated " + std::to_string(s["samples_overlapping"].get<uint64_t>()) +
                                            " samples in " + std::to_string(overlaps) + " overlaps"
                                      : std::string();
      // Time steps likewise: the sender's wall clock stepped (nothing lost).
      if (const uint64_t steps = s["time_steps"].get<uint64_t>())
        repeated += ", time line stepped " + std::to_string(steps) + (steps == 1 ? " time" : " times");
      std::printf("  stream %s: %llu packets, %s, %llu samples, gaps %llu, missing %llu samples in %llu holes%s, "
                  "ts errors %llu, loss flags %llu\n",
                  stream_id_hex(s["stream_id"].get<uint32_t>()).c_str(), (unsigned long long)s["packets"].get<uint64_t>(),
                  final_report ? "total" : (std::to_string(std::llround(s["samples_per_s"].get<double>())) + " samples/s").c_str(),
                  (unsigned long long)s["samples"].get<uint64_t>(),
                  (unsigned long long)s["gaps"].get<uint64_t>(), (unsigned long long)s["samples_missing"].get<uint64_t>(),
                  (unsigned long long)s["holes"].get<uint64_t>(), repeated.c_str(),
                  (unsigned long long)s["timestamp_errors"].get<uint64_t>(),
                  (unsigned long long)s["sample_loss_flags"].get<uint64_t>());
    }
    std::fflush(stdout);
  };

#if VIGIL_HAVE_WEB
  // Web updates: every 1/web_updates s, within a byte budget (a token bucket of one second's worth:
  // an update that does not fit waits for the next turn, counted).
  const int64_t web_period_ns = int64_t(1e9 / (web_updates > 0 ? web_updates : 10));
  int64_t next_web = t0 + web_period_ns, last_web = t0;
  double web_tokens = web_kb_per_s * 1000;
  uint64_t web_rate_limited = 0, last_web_datagrams = 0;
  auto publish_web = [&](int64_t now) {
    uint64_t gaps = 0, missing = 0;
    for (const auto& [id, s] : mon.streams()) {
      gaps += s.gaps;
      missing += s.samples_missing;
    }
    const double dt = double(now - last_web) / 1e9;
    const vigil::web::WebCounters& wc = web->counters();
    // uptime_ms: when the update was made, on this process's clock (a page that falls behind and
    // catches up measures the rates it was sent at from it).
    json counters{{"uptime_ms", (now - t0) / 1'000'000},
                  {"datagrams", datagrams},
                  {"datagrams_per_s", dt > 0 ? std::round(double(datagrams - last_web_datagrams) / dt) : 0.0},
                  {"malformed", malformed}, {"kernel_drops", uint64_t(data_kernel_drops) + event_kernel_drops},
                  {"packet_gaps", gaps}, {"samples_missing", missing},
                  {"events", mon.events()}, {"event_gaps", mon.event_gaps()},
                  {"web", {{"clients", wc.clients.load()}, {"updates_sent", wc.updates_sent.load()},
                           {"updates_skipped", wc.updates_skipped.load()}, {"rate_limited", web_rate_limited},
                           {"bytes_sent", wc.bytes_sent.load()}, {"kb_per_s_limit", web_kb_per_s}}}};
    last_web_datagrams = datagrams;
    web_tokens = std::min(web_kb_per_s * 1000, web_tokens + dt * web_kb_per_s * 1000);
    last_web = now;
    auto text = std::make_shared<const std::string>(view->update(counters, mon));
    if (double(text->size()) > web_tokens) {
      ++web_rate_limited;
      return;
    }
    web_tokens -= double(text->size());
    web->publish(std::move(text));
  };
#endif
  while (!g_stop) {
    const int64_t now = vigil::mono_now_ns();
    if (seconds > 0 && now - t0 >= int64_t(seconds * 1e9)) break;
    if (max_count && datagrams >= max_count) break;
    if (now >= next_report) {
      report(false);
      next_report += 1'000'000'000;
    }
    int wait_ms = busy_poll ? 0 : 50;
#if VIGIL_HAVE_WEB
    if (web) {
      if (now >= next_web) {
        publish_web(now);
        next_web += web_period_ns;
        if (next_web < now) next_web = now + web_period_ns;  // fell behind: no burst to catch up
      }
      if (!busy_poll) wait_ms = int(std::clamp<int64_t>((next_web - vigil::mono_now_ns()) / 1'000'000, 0, 50));
    }
#endif
    const int r = poll(fds.data(), fds.size(), wait_ms);
    if (r < 0 && errno != EINTR) {
      std::cerr << "vigil-listen: poll: " << std::strerror(errno) << "\n";
      return 1;
    }
    for (const pollfd& p : fds) {
      if (!(p.revents & POLLIN)) continue;
      for (;;) {
        if (max_count && datagrams >= max_count) break;
        sockaddr_storage from{};
        iovec iov{buf.data(), buf.size()};
        vigil::UdpGroControl control;
        msghdr msg{};
        msg.msg_name = &from;
        msg.msg_namelen = sizeof from;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.bytes;
        msg.msg_controllen = sizeof control.bytes;
        const ssize_t n = recvmsg(p.fd, &msg, 0);
        if (n < 0) break;  // EAGAIN: drained
        ++receives;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
          if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
            std::memcpy(p.fd == data_fd ? &data_kernel_drops : &event_kernel_drops, CMSG_DATA(c), sizeof(uint32_t));
        // With --gro, one receive may hold several datagrams of one send, each taken in turn.
        vigil::for_each_udp_datagram(buf.data(), size_t(n), vigil::udp_gro_segment(msg),
                                     [&](const uint8_t* dgram, size_t bytes) {
          if (max_count && datagrams >= max_count) return;
          ++datagrams;
          if (p.fd == data_fd) {
            ++data_datagrams;
            // One packet, or a VRL frame of several (an output's `framing: vrl`).
            vigil::vrl::FrameInfo frame;
            const bool whole = vigil::vrl::for_each_packet(
                dgram, bytes,
                [&](const uint8_t* packet, size_t packet_bytes) {
                  vigil::vita49::Decoded d;
                  if (!vigil::vita49::decode(packet, packet_bytes, d)) {
                    ++malformed;
                    return;
                  }
                  mon.on_packet(d);
#if VIGIL_HAVE_WEB
                  if (view) view->on_packet(d, mon.streams().at(d.stream_id));
#endif
                  if (!recorder.dir.empty() && d.type == vigil::vita49::PacketType::kSignalDataWithStreamId)
                    recorder.write(d, mon.streams().at(d.stream_id));
                },
                &frame);
            if (!whole) ++malformed;
            if (frame.packets) ++vrl_frames;
          } else {
            const std::string sender = sender_text(from);
            // The event as it came, as a JSON line (it parsed as one JSON object), unless a line
            // break in it would split the line: no second serialisation of every event. Written to
            // stdout's buffer, flushed once the sockets are drained (below), not per event: a
            // write(2) each capped the events this could take at a rig's tens of thousands a second.
            auto print_json = [&](const uint8_t* text, size_t len, json* ev) {
              const std::string_view raw(reinterpret_cast<const char*>(text), len);
              if (raw.find_first_of("\r\n") == std::string_view::npos) {
                std::cout << R"({"kind":"event","from":")" << sender << R"(","event":)" << raw << "}\n";
                return;
              }
              json parsed;  // (rare: only for events laid out over several lines)
              if (!ev && vigil::parse_event_datagram(text, len, parsed)) ev = &parsed;
              if (ev) std::cout << json{{"kind", "event"}, {"from", sender}, {"event", std::move(*ev)}}.dump() << '\n';
            };
            // One event (any JSON layout), or an output's `framing: lines`: several, one a line.
            // Only the text view and the web view need each event's tree; counting and --json read
            // its seq alone (S1 sends ~100 000 events a second: the tree was most of the cost).
            if (!needs_tree) {
              vigil::for_each_event_seq(dgram, bytes, [&](const uint8_t* text, size_t text_bytes, const uint64_t* seq) {
                if (!seq) {
                  ++bad_events;
                  ++malformed;
                  return;
                }
                mon.on_event_seq(sender, *seq);
                if (!quiet) print_json(text, text_bytes, nullptr);
              });
              return;
            }
            vigil::for_each_event(dgram, bytes, [&](const uint8_t* text, size_t text_bytes, json* parsed) {
              if (!parsed) {
                ++bad_events;
                ++malformed;
                return;
              }
              json& ev = *parsed;
              mon.on_event_seq(sender, ev["seq"].get<uint64_t>());
#if VIGIL_HAVE_WEB
              if (view) view->on_event(ev);
#endif
              if (quiet) return;
              if (as_json)
                print_json(text, text_bytes, &ev);
              else
                std::printf("%s\n", vigil::event_line(ev).c_str());
            });
          }
        });
      }
    }
    std::fflush(stdout);
  }
  report(true);
  for (const pollfd& p : fds) close(p.fd);
  return 0;
}
