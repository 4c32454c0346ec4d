// vigild: the service. Loads a config, runs capture -> graph -> UDP until SIGINT/SIGTERM,
// --seconds, or the end of the source; then drains and exits 0.
#include <sys/mman.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/out_of_memory.hpp"
#include "apps/cli_args.hpp"
#include "apps/log.hpp"
#include "config/config_loader.hpp"
#include "core/worker_pool.hpp"
#include "wire/local_address.hpp"
#include "pipeline/metrics_server.hpp"
#include "wire/name_wait.hpp"
#include "pipeline/prometheus.hpp"
#include "pipeline/service.hpp"
#include "systemd/sd_notifier.hpp"

namespace {

// Seconds with millisecond resolution ("5.020"): what a person reads and bench/scenario_ab.py parses.
std::string seconds_text(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(ns) / 1e9);
  return buf;
}

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;
constexpr const char* kNoMemory =
    "not enough memory for the buffers and filters the config describes; lower source.channels, "
    "source.chunk_frames, pipeline.pool_chunks, pipeline.output_slots or the stages' taps";

std::string default_config_path() {
  for (const std::string& p : {std::string(VIGIL_INSTALL_CONFIG), std::string(VIGIL_SOURCE_DIR) + "/config/vigil.yaml"})
    if (std::filesystem::exists(p)) return p;
  return std::string(VIGIL_SOURCE_DIR) + "/config/vigil.yaml";
}

// Prints every error as FILE:LINE:COLUMN: message; returns whether the config is valid.
std::optional<vigil::Settings> load(const std::string& path) {
  vigil::ConfigResult r = vigil::load_config_file(path);
  for (const auto& e : r.errors) std::cerr << vigil::format_error(path, e) << "\n";
  return r.settings;
}

// --check-config: the file, then every host it names looked up with this machine's resolver (the
// loader does not, so that a reload never waits on DNS). A name that does not exist is an error,
// as vigild would stop at it; one the resolver cannot answer for now is a warning, as vigild waits
// for it at start. Returns the exit code.
int check_config(const std::string& path, bool look_up_names) {
  vigil::ConfigResult r = vigil::load_config_file(path);
  for (const auto& e : r.errors) std::cerr << vigil::format_error(path, e) << "\n";
  if (!r.settings) return kExitUsage;
  for (vigil::ConfigError w : r.warnings) {
    w.message = "warning: " + w.message;
    std::cerr << vigil::format_error(path, w) << "\n";
  }
  bool names_ok = true;
  std::map<std::string, std::pair<vigil::NameLookup, std::string>> seen;  // each name looked up once
  const std::string wait_s = std::to_string(int(vigil::NameWait{}.timeout_s));
  for (const vigil::HostPlace& place : look_up_names ? r.hosts : std::vector<vigil::HostPlace>{}) {
    using Use = vigil::HostPlace::Use;
    if (place.use != Use::kDestination) {
      // This machine's own address or interface: absent now is a warning (vigild waits for it; the
      // config may be meant for another machine). A listen name that does not exist is an error.
      std::string why;
      const vigil::NameLookup here = place.use == Use::kListen ? vigil::look_up_listen_address(place.host, why)
                                                               : vigil::look_up_interface(place.host, why);
      if (here == vigil::NameLookup::kResolved) continue;
      const bool fatal = here == vigil::NameLookup::kNotFound;
      std::cerr << vigil::format_error(path, {place.line, place.column,
                                              (fatal ? "" : "warning: ") + place.where + ": '" + place.host +
                                                  (fatal ? "' cannot be used here: " + why + " (vigild would not start)"
                                                         : "': " + why + " (vigild waits up to " + wait_s +
                                                               " s for it at start)")})
                << "\n";
      names_ok = names_ok && !fatal;
      continue;
    }
    auto it = seen.find(place.host);
    if (it == seen.end()) {
      std::string why;
      const vigil::NameLookup found = vigil::look_up_name(place.host, why);
      it = seen.emplace(place.host, std::make_pair(found, why)).first;
    }
    const auto& [found, why] = it->second;
    if (found == vigil::NameLookup::kResolved) continue;
    const vigil::ConfigError e{place.line, place.column,
                               found == vigil::NameLookup::kNotFound
                                   ? place.where + ": cannot resolve '" + place.host + "': " + why +
                                         " (vigild would not start; --no-lookup skips this check)"
                                   : "warning: " + place.where + ": '" + place.host + "' cannot be looked up now (" +
                                         why + "); vigild waits up to " + wait_s + " s for it at start"};
    std::cerr << vigil::format_error(path, e) << "\n";
    names_ok = names_ok && found != vigil::NameLookup::kNotFound;
  }
  if (!names_ok) return kExitUsage;
  std::cout << path << ": ok\n";
  return kExitOk;
}

std::string status_line(const nlohmann::json& s) {
  // The slowest stage by p99, so `systemctl status` shows where the time goes.
  std::string slowest;
  uint64_t slowest_p99 = 0;
  if (s.contains("stages"))
    for (const auto& [name, st] : s["stages"].items())
      if (st.contains("time_us") && st["time_us"].value("p99", 0ull) >= slowest_p99) {
        slowest_p99 = st["time_us"].value("p99", 0ull);
        slowest = name;
      }
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "chunks in %llu out %llu, dropped frames %llu, deadline misses %llu, latency p99 %llu us%s%s%s",
                (unsigned long long)s.value("chunks_in", 0ull), (unsigned long long)s.value("chunks_out", 0ull),
                (unsigned long long)(s.value("dropped_frames", 0ull) + s.value("output_dropped_frames", 0ull)),
                (unsigned long long)s.value("deadline_misses", 0ull),
                (unsigned long long)s["latency_us"].value("p99", 0ull), slowest.empty() ? "" : ", slowest stage ",
                slowest.c_str(), slowest.empty() ? "" : (" p99 " + std::to_string(slowest_p99) + " us").c_str());
  return buf;
}

void log_status(const nlohmann::json& s) {
  const nlohmann::json& out = s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
               "vigild: chunks in %llu out %llu, dropped frames %llu, deadline misses %llu, latency p50 %llu us "
               "p99 %llu us max %llu us, send errors %llu (refused %llu, buffer full %llu)",
               (unsigned long long)s.value("chunks_in", 0ull), (unsigned long long)out.value("chunks_out", 0ull),
               (unsigned long long)(s.value("dropped_frames", 0ull) + s.value("output_dropped_frames", 0ull)),
               (unsigned long long)out.value("deadline_misses", 0ull),
               (unsigned long long)out["latency_us"].value("p50", 0ull),
               (unsigned long long)out["latency_us"].value("p99", 0ull),
               (unsigned long long)out["latency_us"].value("max", 0ull),
               (unsigned long long)out.value("send_errors", 0ull), (unsigned long long)out.value("send_refused", 0ull),
               (unsigned long long)out.value("send_buffer_full", 0ull));
  std::string line = buf;
  // A paced synthetic or replayed source that fell behind its rate: no deadline shows that.
  const uint64_t late = s.contains("source") ? s["source"].value("late_chunks", 0ull) : 0;
  if (late) line += ", source late chunks " + std::to_string(late) + " (it could not keep its rate)";
  vigil::log::line(late ? vigil::log::Level::kWarning : vigil::log::Level::kInfo, line);
}

// A line the capture or pipeline thread queued (Service::drain_logs), into the journal.
void log_rt_line(int level, const char* text) { vigil::log::line(vigil::log::Level(level), std::string("vigild: ") + text); }

// SIGHUP: reads `path` again. Invalid: rejected with FILE:LINE:COLUMN messages, the running
// config stays. Coefficients and thresholds only: applied in place between two chunks. Anything
// structural: the service is stopped, drained and rebuilt (the old config comes back if the new
// one cannot be built). Each outcome is logged and sent as a `reload` event. Returns whether the
// service was rebuilt.
bool reload(const std::string& path, std::unique_ptr<vigil::Service>& service) {
  using vigil::log::Level;
  vigil::log::line(Level::kNotice, "vigild: SIGHUP: reloading " + path);
  vigil::ConfigResult r = vigil::load_config_file(path);
  if (!r.settings) {
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& e : r.errors) {
      std::cerr << vigil::format_error(path, e) << "\n";
      errors.push_back(vigil::format_error(path, e));
    }
    const size_t n = r.errors.size();
    vigil::log::line(Level::kError, "vigild: reload rejected (" + std::to_string(n) + (n == 1 ? " error" : " errors") +
                                        " above): the running config stays");
    service->post_event("reload", {{"result", "rejected"}, {"path", path}, {"errors", errors}});
    return false;
  }
  std::string why;
  try {
    uint64_t from_frame = 0;
    if (service->update(*r.settings, why, &from_frame)) {
      vigil::log::line(Level::kNotice, "vigild: reload: coefficients and thresholds updated in place from frame " +
                                           std::to_string(from_frame) + ", no sample lost");
      service->post_event("reload", {{"result", "updated"}, {"path", path}, {"from_frame", from_frame}});
      return false;
    }
  } catch (const std::exception& e) {
    vigil::log::line(Level::kError, std::string("vigild: reload rejected: ") + e.what() + ": the running config stays");
    service->post_event("reload", {{"result", "rejected"}, {"path", path}, {"errors", {e.what()}}});
    return false;
  }
  vigil::log::line(Level::kNotice, "vigild: reload: " + why + ": rebuilding the pipeline");
  const vigil::Settings old = service->settings();
  service->request_stop();
  service->join();
  service->drain_logs(log_rt_line);
  const uint64_t seq = service->next_event_seq();
  service.reset();  // the source (a device) is free again before the new service opens it
  nlohmann::json event = {{"result", "rebuilt"}, {"path", path}, {"reason", why}};
  try {
    service = std::make_unique<vigil::Service>(*r.settings);
  } catch (const std::exception& e) {
    vigil::log::line(Level::kError, std::string("vigild: the new config cannot run: ") + e.what() +
                                        ": restarting with the previous one");
    event = {{"result", "rejected"}, {"path", path}, {"errors", {e.what()}}};
    service = std::make_unique<vigil::Service>(old);
  }
  vigil::log::line(Level::kInfo, "vigild: " + service->describe());
  for (const std::string& w : service->source_warnings()) vigil::log::line(Level::kWarning, "vigild: " + w);
  vigil::log::line(Level::kInfo, "vigild: " + service->describe_outputs());
  service->set_next_event_seq(seq);  // receivers see one unbroken event sequence
  service->post_event("reload", event);
  for (const std::string& note : service->start()) vigil::log::line(Level::kInfo, "vigild: " + note);
  return true;
}

// What the network gives a machine after boot, which vigild needs before it starts: destination
// names that cannot be looked up yet (its network or DNS not up), metrics.listen's address and
// multicast outputs' interfaces not on this machine yet (DHCP, a slow link). Waited for, up to
// name_wait.timeout_s, saying so in the log and to systemd; then the start fails where it would have.
void wait_for_the_network(const vigil::Settings& settings, vigil::SdNotifier& notifier) {
  std::set<std::string> names;
  std::vector<vigil::Awaited> items;
  auto add_outputs = [&](const auto& outputs) {
    for (const auto& o : outputs) {
      if (names.insert(o.destination.host).second)
        items.push_back({"the name " + o.destination.host + " to resolve",
                         [host = o.destination.host](std::string& why) { return vigil::look_up_name(host, why); }});
      if (!o.multicast.interface.empty())
        items.push_back({"the interface " + o.multicast.interface + " that output " +
                             vigil::format_endpoint(o.destination) + " sends from",
                         [i = o.multicast.interface, group = o.destination.host](std::string& why) {
                           return vigil::look_up_interface(i, why, group);
                         }});
    }
  };
  add_outputs(settings.data_outputs);
  add_outputs(settings.event_outputs);
  if (settings.metrics.enabled)
    items.push_back({"metrics.listen " + settings.metrics.listen.host + " to be an address of this machine",
                     [host = settings.metrics.listen.host](std::string& why) {
                       return vigil::look_up_listen_address(host, why);
                     }});
  vigil::NameWait name_wait;
  std::map<std::string, double> log_at;  // per item: its first wait, then every 10 s
  name_wait.on_wait = [&](const std::string& what, const std::string& why, double waited) {
    const std::string text = "waiting for " + what + " (" + why + "), " + std::to_string(int(waited)) + " of " +
                             std::to_string(int(name_wait.timeout_s)) + " s";
    if (waited >= log_at[what]) {
      vigil::log::line(vigil::log::Level::kWarning, "vigild: " + text);
      log_at[what] = waited + 10;
    }
    if (notifier.enabled()) notifier.notify("EXTEND_TIMEOUT_USEC=10000000\nSTATUS=" + text);
  };
  vigil::wait_for(items, name_wait);
}

}  // namespace

int main(int argc, char** argv) {
  vigil::CliArgs args({
      {"help", false, "show this help", ""},
      {"version", false, "print the version", ""},
      {"config", true, "config file (default: the installed or in-tree config/vigil.yaml)", ""},
      {"check-config", true, "validate FILE, print FILE:LINE:COLUMN: message per error; exit 0 or 2", ""},
      {"no-lookup", false, "with --check-config: do not look up the host names it gives", ""},
      {"seconds", true, "stop by itself after this many seconds (0: run until a signal)", "0"},
      {"log-interval", true, "seconds between status lines on stderr (0: none)", "10"},
  });
  double seconds = 0, log_interval = 0;
  try {
    args.parse(argc, argv);
    seconds = args.number("seconds", 0, 1e9);
    log_interval = args.number("log-interval", 0, 1e6);
  } catch (const std::exception& e) {
    std::cerr << "vigild: " << e.what() << "\n";
    return kExitUsage;
  }
  if (args.has("help")) {
    std::cout << "usage: vigild [--config FILE] [--seconds S]\n       vigild --check-config FILE [--no-lookup]\n\n"
              << "Captures, filters, detects and sends data and events over UDP.\n\n" << args.help();
    return kExitOk;
  }
  if (args.has("version")) {
    std::cout << "vigild " << VIGIL_VERSION << "\n";
    return kExitOk;
  }
  if (args.has("check-config")) return check_config(args.get("check-config"), !args.has("no-lookup"));

  const std::string path = args.has("config") ? args.get("config") : default_config_path();
  std::optional<vigil::Settings> settings = load(path);
  if (!settings) {
    std::cerr << "vigild: " << path << " is not a valid config (errors above)\n";
    return kExitUsage;
  }

  vigil::SdNotifier notifier;
  // Before the signals are blocked: a stop while it waits simply ends the process.
  wait_for_the_network(*settings, notifier);

  // Block the stop signals before any thread starts so that only sigtimedwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // acknowledge latched alarms
  sigaddset(&stop_signals, SIGHUP);   // reload the config
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A file size limit (ulimit -f) must stop a recording with an error (EFBIG), not the service.
  std::signal(SIGXFSZ, SIG_IGN);

  // Preparing the graph (filter design, FFT plans, on a GPU its context and kernels) can take
  // longer than systemd's start timeout on a cold machine: ask for more before it starts.
  if (notifier.enabled()) notifier.notify("EXTEND_TIMEOUT_USEC=60000000\nSTATUS=preparing the pipeline");
  std::unique_ptr<vigil::Service> service;
  try {
    service = std::make_unique<vigil::Service>(*settings);
  } catch (const std::bad_alloc&) {
    // A valid config asking for more than this machine grants: the config's fault, like any
    // other value out of range here (exit 2, not a failure worth a restart).
    vigil::log::line(vigil::log::Level::kError, "vigild: cannot start with " + path + ": " + kNoMemory);
    return kExitUsage;
  } catch (const vigil::OutOfMemory& e) {
    vigil::log::line(vigil::log::Level::kError, "vigild: cannot start with " + path + ": " + e.what() + ": " + kNoMemory);
    return kExitUsage;
  } catch (const std::exception& e) {
    vigil::log::line(vigil::log::Level::kError, "vigild: cannot start with " + path + ": " + e.what());
    return kExitFailure;
  }
  vigil::log::line(vigil::log::Level::kInfo, std::string("vigild ") + VIGIL_VERSION + ": config " + path);
  vigil::log::line(vigil::log::Level::kInfo, "vigild: " + service->describe());
  for (const std::string& w : service->source_warnings())
    vigil::log::line(vigil::log::Level::kWarning, "vigild: " + w);
  vigil::log::line(vigil::log::Level::kInfo, "vigild: " + service->describe_outputs());
  std::unique_ptr<vigil::MetricsServer> metrics;
  if (settings->metrics.enabled) {
    try {
      metrics = std::make_unique<vigil::MetricsServer>(settings->metrics.listen);
      vigil::log::line(vigil::log::Level::kInfo, "vigild: Prometheus metrics on http://" + settings->metrics.listen.host +
                                                     ":" + std::to_string(metrics->port()) + "/metrics");
    } catch (const std::exception& e) {
      vigil::log::line(vigil::log::Level::kError, std::string("vigild: ") + e.what());
      return kExitFailure;
    }
  }
  if (notifier.enabled()) notifier.notify("STATUS=starting: " + service->describe());
  if (settings->pipeline.mlockall) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
      vigil::log::line(vigil::log::Level::kInfo, "vigild: memory locked (mlockall)");
    else
      vigil::log::line(vigil::log::Level::kWarning, std::string("vigild: mlockall not permitted (") + std::strerror(errno) +
                                                        "): running with pageable memory");
  }
  if (settings->pipeline.busy_poll) {
    // Spinning threads: the pipeline and output threads, and the pool's helpers (at most).
    const uint32_t cores = vigil::WorkerPool::hardware_threads();
    const uint32_t threads = settings->pipeline.threads ? settings->pipeline.threads : vigil::WorkerPool::default_threads();
    if (1 + threads >= cores)
      vigil::log::line(vigil::log::Level::kWarning,
                       "vigild: pipeline.busy_poll with up to " + std::to_string(1 + threads) + " spinning threads on " +
                           std::to_string(cores) + " cores: capture and the system will have to preempt them; "
                           "lower pipeline.threads or leave busy_poll off");
  }
  for (const std::string& note : service->start())
    vigil::log::line(note.find("not permitted") != std::string::npos || note.find("capped at") != std::string::npos
                         ? vigil::log::Level::kWarning
                         : vigil::log::Level::kInfo,
                     "vigild: " + note);
  // READY=1 once the first chunk has gone all the way through; WATCHDOG=1 every half period
  // only while chunks keep advancing, so a stalled pipeline gets the service restarted.
  bool ready = false, stalled = false;
  uint64_t last_progress = 0;
  const int64_t ping_ns = int64_t(notifier.watchdog_usec()) * 1000 / 2;
  int64_t next_ping = vigil::mono_now_ns() + ping_ns, next_status = 0;

  const int64_t t_start = vigil::mono_now_ns();
  int64_t next_log = t_start + int64_t(log_interval * 1e9);
  const timespec tick{0, 100'000'000};
  const char* why = "the source ended";
  for (;;) {
    const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
    if (sig == SIGINT || sig == SIGTERM) {
      why = sig == SIGINT ? "SIGINT" : "SIGTERM";
      break;
    }
    if (sig == SIGUSR1) {
      service->acknowledge_alarms();
      vigil::log::line(vigil::log::Level::kNotice, "vigild: SIGUSR1: latched alarms acknowledged");
    }
    if (sig == SIGHUP) {
      if (notifier.enabled())
        notifier.notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(vigil::mono_now_ns() / 1000));
      if (reload(path, service)) last_progress = UINT64_MAX;  // a new service counts from 0
      if (notifier.enabled()) notifier.notify("READY=1");
    }
    if (service->finished()) break;
    if (metrics) metrics->serve_pending([&] { return vigil::prometheus_text(service->report()); });
    service->drain_logs(log_rt_line);
    const int64_t now = vigil::mono_now_ns();
    if (notifier.enabled()) {
      const uint64_t progress = service->progress();
      if (!ready && progress > 0) {
        ready = true;
        notifier.notify("READY=1\nSTATUS=" + status_line(service->report()));
      }
      if (ping_ns > 0 && now >= next_ping) {
        next_ping = now + ping_ns;
        // A device that is gone is being retried: the service is healthy, so pings go on
        // (restarting vigild would not bring the device back).
        if (progress != last_progress || service->source_down()) {
          notifier.notify("WATCHDOG=1");
          if (stalled) vigil::log::line(vigil::log::Level::kNotice, "vigild: the pipeline moves again: watchdog pings resume");
          stalled = false;
        } else if (ready && !stalled) {
          stalled = true;
          vigil::log::line(vigil::log::Level::kError, "vigild: no chunk has gone through for " +
                                                          std::to_string(ping_ns / 1'000'000) +
                                                          " ms: withholding watchdog pings");
        }
        last_progress = progress;
      }
      if (now >= next_status) {
        next_status = now + 1'000'000'000;
        notifier.notify("STATUS=" + std::string(stalled ? "STALLED: " : service->source_down() ? "SOURCE DOWN, retrying: " : "") +
                        status_line(service->report()));
      }
    }
    if (seconds > 0 && now - t_start >= int64_t(seconds * 1e9)) {
      why = "--seconds elapsed";
      break;
    }
    if (log_interval > 0 && now >= next_log) {
      next_log = now + int64_t(log_interval * 1e9);
      log_status(service->report());
    }
  }
  vigil::log::line(vigil::log::Level::kInfo, std::string("vigild: stopping (") + why + "): draining");
  if (notifier.enabled()) notifier.notify("STOPPING=1");
  service->request_stop();
  service->join();
  service->drain_logs(log_rt_line);
  log_status(service->report());
  vigil::log::line(vigil::log::Level::kInfo,
                   "vigild: stopped after " + seconds_text(vigil::mono_now_ns() - t_start) + " s");
  return kExitOk;
}
