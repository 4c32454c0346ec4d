// Multicast outputs: vigild sends its data and events to a group, and every vigil-listen that
// joined it gets all of them (a rig's historian and a dashboard on one stream). IPv4 on the host's
// loopback; IPv6 (where CMake found a user + network namespace with a veth pair: loopback carries
// no IPv6 multicast) inside a namespace of the test's own.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../support/ports.hpp"
#include "../support/graphs.hpp"
#include "../support/process.hpp"
#include "../support/temp_dir.hpp"

namespace vigil {
namespace {

using nlohmann::json;
using test::TempDir;

const std::string kBin = VIGIL_BIN_DIR;

// 2 channels at 51.2 kHz for 1 s of signal (at 4x real time), a sine above the threshold in each:
// the input and two bands to `group` (as written in YAML, quoted), events beside them; the
// multicast keys added to each output.
std::string multicast_config(const std::string& group, uint16_t data_port, uint16_t event_port,
                             const std::string& multicast_keys) {
  return "source: {kind: synthetic, rate_hz: 51200, channels: 2, chunk_frames: 512, duration_s: 1.0, rate_factor: 4,\n"
         "         signals: [{sines: [{freq_hz: 3000, amplitude: 0.3}]}, {sines: [{freq_hz: 500, amplitude: 0.3}]}]}\n"
         "stages:\n" + test::bands_stages(test::BandsGraph().threshold(0.1)) +
         "outputs:\n"
         "  - {kind: vita49, stream: input, destination: \"" + group + ":" + std::to_string(data_port) + "\", " +
         multicast_keys + "}\n"
         "  - {kind: vita49, stream: bands, destination: \"" + group + ":" + std::to_string(data_port) + "\", " +
         multicast_keys + "}\n"
         "  - {kind: events, destination: \"" + group + ":" + std::to_string(event_port) +
         "\", status_interval_s: 0.5, " + multicast_keys + "}\n";
}

// What one vigil-listen --json got: its summary line and its events' sequence numbers.
struct Heard {
  json summary;
  std::vector<uint64_t> seqs;
};

Heard read_listen(const std::string& path) {
  Heard h;
  std::ifstream lines(path);
  std::string line;
  while (std::getline(lines, line)) {
    const json j = json::parse(line);
    if (j["kind"] == "summary") h.summary = j;
    if (j["kind"] == "event") h.seqs.push_back(j["event"]["seq"].get<uint64_t>());
  }
  return h;
}

// Every stream whole (6: 2 input channels, 2 channels x 2 bands; 51 200 samples each, no gap, no
// hole), every event in sequence, including the alarm the sine raises.
void expect_everything(const Heard& h, const std::string& who) {
  ASSERT_FALSE(h.summary.is_null()) << who << ": no summary";
  EXPECT_EQ(h.summary["malformed"], 0) << who;
  EXPECT_EQ(h.summary["event_gaps"], 0) << who;
  ASSERT_EQ(h.summary["streams"].size(), 6u) << who << " " << h.summary.dump();
  for (const json& s : h.summary["streams"]) {
    EXPECT_EQ(s["samples"], 51200) << who << " " << s.dump();
    EXPECT_EQ(s["gaps"], 0) << who << " " << s.dump();
    EXPECT_EQ(s["holes"], 0) << who << " " << s.dump();
  }
  ASSERT_GE(h.seqs.size(), 3u) << who;  // the start status, an alarm, the final status at least
  for (size_t i = 0; i < h.seqs.size(); ++i) EXPECT_EQ(h.seqs[i], i) << who;
}

// Two receivers joined to an IPv4 group on loopback each get every packet and event; the
// sender's datagrams go out on loopback only (multicast_interface), one hop.
TEST(VigildMulticast, TwoReceiversOfAnIpv4GroupEachGetEverything) {
  TempDir dir("mcast4");
  // A group of this process's own, so that tests run side by side do not hear each other.
  const std::string group = "239.255." + std::to_string(getpid() % 250) + "." + std::to_string(getpid() / 250 % 250);
  const uint16_t data_port = test::free_udp_port(), event_port = test::free_udp_port();
  const std::string config = dir.write(
      "vigil.yaml", multicast_config(group, data_port, event_port, "multicast_interface: 127.0.0.1, multicast_ttl: 1"));
  std::vector<std::unique_ptr<test::Process>> listeners;
  for (const char* name : {"a.jsonl", "b.jsonl"})
    listeners.push_back(std::make_unique<test::Process>(
        std::vector<std::string>{kBin + "/vigil-listen", "--bind", group, "--interface", "127.0.0.1", "--data-port",
                                 std::to_string(data_port), "--event-port", std::to_string(event_port), "--json",
                                 "--seconds", "30"},
        dir.file(name)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both joined
  test::Process vigild(
      {"/bin/sh", "-c", "exec " + kBin + "/vigild --config " + config + " --log-interval 0 2>" +
                            dir.file("vigild.log")});
  const int st = vigild.wait(std::chrono::seconds(20));
  ASSERT_NE(st, -1);
  EXPECT_EQ(WEXITSTATUS(st), 0) << test::read_text(dir.file("vigild.log"));
  const std::string log = test::read_text(dir.file("vigild.log"));
  EXPECT_NE(log.find("send errors 0 (refused 0, buffer full 0)"), std::string::npos) << log;
  const std::string to = group + ":" + std::to_string(data_port) + " (multicast, TTL 1, via 127.0.0.1)";
  EXPECT_NE(log.find("vigild: outputs: input to " + to + ", bands to " + to + ", events to " + group + ":" +
                     std::to_string(event_port) + " (multicast, TTL 1, via 127.0.0.1)\n"),
            std::string::npos)
      << log;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (auto& l : listeners) {
    l->signal(SIGINT);
    ASSERT_NE(l->wait(std::chrono::seconds(5)), -1);
  }
  const Heard a = read_listen(dir.file("a.jsonl")), b = read_listen(dir.file("b.jsonl"));
  expect_everything(a, "receiver a");
  expect_everything(b, "receiver b");
  EXPECT_EQ(a.summary["datagrams"], b.summary["datagrams"]);
}

#if VIGIL_TEST_VETH
// The same over IPv6, in a user + network namespace with a veth pair (loopback carries no IPv6
// multicast): vigild sends to ff15:: on one end, named as its multicast_interface; a receiver
// joined on that interface gets everything.
TEST(VigildMulticast, AReceiverOfAnIpv6GroupGetsEverything) {
  TempDir dir("mcast6");
  const std::string config =
      dir.write("vigil.yaml", multicast_config("[ff15::5]", 5991, 5992, "multicast_interface: v0"));
  const std::string out = dir.file("listen.jsonl"), log = dir.file("vigild.log");
  // Inside the namespace nothing else is bound: fixed ports are free. The link-local address must
  // be past duplicate address detection before it can send.
  const std::string script =
      "ip link add v0 type veth peer name v1 && ip link set v0 up && ip link set v1 up && "
      "for i in $(seq 50); do ip -6 addr show dev v0 | grep -q tentative || break; sleep 0.1; done; "
      "{ " + kBin + "/vigil-listen --bind ff15::5 --interface v0 --data-port 5991 --event-port 5992 --json >" + out +
      " & l=$!; sleep 0.3; " + kBin + "/vigild --config " + config + " --log-interval 0 2>" + log +
      "; rc=$?; sleep 0.3; kill -INT $l; wait $l; exit $rc; }";
  test::Process p({"/usr/bin/unshare", "-rn", "/bin/sh", "-c", script});
  const int st = p.wait(std::chrono::seconds(60));
  ASSERT_NE(st, -1);
  EXPECT_EQ(WEXITSTATUS(st), 0) << test::read_text(log);
  EXPECT_NE(test::read_text(log).find("send errors 0 (refused 0, buffer full 0)"), std::string::npos)
      << test::read_text(log);
  expect_everything(read_listen(out), "the receiver");
}
#endif

}  // namespace
}  // namespace vigil
