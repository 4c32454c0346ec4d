// The Prometheus endpoint of the real vigild: off unless configured; GET /metrics answers with
// well-formed text exposition whose counters match the service's; anything else gets a 404.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "../support/ports.hpp"
#include "../support/graphs.hpp"
#include "../support/process.hpp"
#include "../support/udp_receiver.hpp"
#include "../support/vigild_run.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
const std::string kVigild = std::string(VIGIL_BIN_DIR) + "/vigild";

// One HTTP request; the whole response, or "" when nothing listens.
std::string http_get(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  send(fd, req.data(), req.size(), 0);
  std::string resp;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) resp.append(buf, size_t(n));
  close(fd);
  return resp;
}

// TCP sockets in LISTEN state that process `pid` holds (by inode, from /proc).
int listening_sockets(pid_t pid) {
  std::set<std::string> inodes;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  int n = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream t(table);
    std::string line;
    std::getline(t, line);  // header
    while (std::getline(t, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode)) ++n;
    }
  }
  return n;
}

TEST(Metrics, PrometheusEndpointServesTheStatusCounters) {
  const fs::path dir = fs::temp_directory_path() / ("vigil-metrics-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const uint16_t port = test::free_tcp_port();
  const fs::path config = dir / "vigil.yaml";
  std::ofstream(config) << "source: {kind: synthetic, rate_hz: 51200, channels: 2, chunk_frames: 512, rate_factor: 5}\n"
                        << "stages:\n"
                        << test::bands_stages(test::BandsGraph().taps(31).low_band_only().level("level").window_s(0).threshold(0.5))
                        << R"(outputs:
  - {kind: events, destination: "127.0.0.1:9"}
metrics: {listen: "127.0.0.1:)" << port << R"("}
record: {directory: )" << (dir / "rec").string() << R"(}
health: {sysfs_root: )" << (dir / "sys").string() << R"(}
)";
  // The SoC as sysfs shows it: one thermal zone, one GPU clock capped below its hardware maximum.
  for (const auto& [file, text] : {std::pair{"class/thermal/thermal_zone0/type", "GPU-therm"},
                                   {"class/thermal/thermal_zone0/temp", "47250"},
                                   {"class/devfreq/gpu/cur_freq", "612000000"},
                                   {"class/devfreq/gpu/min_freq", "306000000"},
                                   {"class/devfreq/gpu/max_freq", "612000000"},
                                   {"class/devfreq/gpu/available_frequencies", "306000000 612000000 1300000000"}}) {
    fs::create_directories((dir / "sys" / file).parent_path());
    std::ofstream(dir / "sys" / file) << text << "\n";
  }
  test::Process vigild({kVigild, "--config", config.string(), "--log-interval", "0"});
  std::string resp;
  for (int i = 0; i < 50 && resp.find("vigil_chunks_out_total") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    resp = http_get(port, "/metrics");
  }
  const std::string missing = http_get(port, "/");
  const int listening = listening_sockets(vigild.pid());
  vigild.signal(SIGTERM);
  const int status = vigild.wait(std::chrono::seconds(10));
  fs::remove_all(dir);
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0);

  EXPECT_EQ(listening, 1);  // the metrics socket, and nothing else
  ASSERT_EQ(resp.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << resp;
  EXPECT_NE(resp.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(missing.rfind("HTTP/1.1 404", 0), 0u) << missing;
  const std::string body = resp.substr(resp.find("\r\n\r\n") + 4);
  // Every line is a comment or `name{labels} value`; every sample's family was declared first.
  const std::regex sample_re(R"(^([a-z_]+)(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (-?[0-9.]+(e[-+]?[0-9]+)?)$)");
  std::set<std::string> declared;
  std::map<std::string, double> values;
  std::istringstream lines(body);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      declared.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample_re)) << "malformed line: " << line;
    EXPECT_TRUE(declared.count(m[1].str())) << "no # TYPE before " << line;
    values[m[1].str() + m[2].str()] = std::stod(m[4].str());
    ++samples;
  }
  EXPECT_GT(samples, 20);
  EXPECT_GT(values["vigil_chunks_in_total"], 0);
  EXPECT_GT(values["vigil_frames_in_total"], 0);
  EXPECT_EQ(values["vigil_dropped_frames_total"], 0);
  EXPECT_TRUE(values.count(R"(vigil_stage_seconds{stage="bands",quantile="0.99"})")) << body;
  EXPECT_TRUE(values.count(R"(vigil_latency_seconds{quantile="0.5"})")) << body;
  EXPECT_TRUE(values.count(R"(vigil_queue_depth{queue="capture_to_pipeline"})")) << body;
  EXPECT_EQ(values[R"(vigil_source_running{kind="synthetic"})"], 1);
  EXPECT_EQ(values["vigil_recording"], 1);
  EXPECT_GT(values["vigil_record_bytes_total"], 0);
  EXPECT_EQ(values["vigil_record_write_errors_total"], 0);
  EXPECT_EQ(values["vigil_record_dropped_chunks_total"], 0);
  EXPECT_EQ(values[R"(vigil_temperature_celsius{zone="GPU-therm"})"], 47.25);
  EXPECT_EQ(values[R"(vigil_clock_hertz{clock="devfreq/gpu",kind="gpu"})"], 612e6);
  EXPECT_EQ(values[R"(vigil_clock_cap_hertz{clock="devfreq/gpu",kind="gpu"})"], 612e6);
  EXPECT_EQ(values[R"(vigil_clock_max_hertz{clock="devfreq/gpu",kind="gpu"})"], 1300e6);
  EXPECT_EQ(values[R"(vigil_clock_throttled{clock="devfreq/gpu"})"], 0);  // capped from the start: reference "start"
  EXPECT_GE(values["vigil_health_readings_total"], 1);
  EXPECT_EQ(values["vigil_health_read_errors_total"], 0);
  EXPECT_EQ(values["vigil_health_alarms_active"], 0);
  // On the CUDA backend (a GPU machine) the fir_bank's GPU time and error count are there too.
  if (values.count(R"(vigil_cuda_errors_total{stage="bands"})")) {
    EXPECT_EQ(values[R"(vigil_cuda_errors_total{stage="bands"})"], 0);
    EXPECT_TRUE(values.count(R"(vigil_stage_gpu_seconds{stage="bands",quantile="0.99"})")) << body;
  }
}

TEST(Metrics, NoListeningSocketUnlessConfigured) {
  // A config with no `metrics:` key (as the shipped default): while vigild is seen to run (its
  // start event arrived, and it exits cleanly when stopped), nothing answers on the default port
  // or a free one, and it holds no listening TCP socket at all.
  const fs::path dir = fs::temp_directory_path() / ("vigil-nometrics-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const uint16_t port = test::free_tcp_port();
  test::UdpSocket data, events;
  const fs::path config = dir / "vigil.yaml";
  std::ofstream(config) << "source: {kind: synthetic, rate_hz: 8000, channels: 1, chunk_frames: 80}\n"
                        << "outputs:\n  - {kind: events, destination: \"127.0.0.1:" << events.port << "\"}\n";
  test::VigildRun run(data, events, config.string(), (dir / "vigild.log").string());
  run.run_for(300);
  ASSERT_TRUE(run.received.started.load()) << "vigild sent no start event: " << test::read_text((dir / "vigild.log").string());
  EXPECT_EQ(http_get(9102, "/metrics"), "");
  EXPECT_EQ(http_get(port, "/metrics"), "");
  EXPECT_EQ(listening_sockets(run.pid()), 0);
  const int status = run.finish();
  fs::remove_all(dir);
  ASSERT_NE(status, -1) << "vigild did not stop";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
}

}  // namespace
}  // namespace vigil
