// The fleet output through real nats-server processes on loopback (docs/FLEET.md): a 3-node
// cluster with a leaf node behind a relay the test cuts, the real vigild publishing to the leaf,
// the real vigil-listen reading the central stream; two rigs into one stream with the broker
// started after them; MQTT readers (mosquitto_sub) on the same events.
#include <gtest/gtest.h>
#include <nats/nats.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "../support/nats_server.hpp"
#include "../support/tcp_relay.hpp"
#include "../support/temp_dir.hpp"
#include "../support/vigild_run.hpp"
#include "wire/fleet_order.hpp"
#include "wire/fleet_reader.hpp"

namespace vigil {
namespace {

using nlohmann::json;
using test::NatsServer;
using test::TempDir;

// nats-server and mosquitto_sub are test dependencies like GoogleTest (scripts/deps-debian.txt):
// their absence fails.
#define REQUIRE_NATS_SERVER()                                                                           \
  ASSERT_FALSE(test::nats_server_path().empty())                                                      \
      << "nats-server is not installed (scripts/install-deps.sh installs it: apt-get install nats-server)"

// The deadline these runs judge: any wait for the broker on vigild's threads would last at least
// a reconnect wait (250 ms), an acknowledgement timeout (1 s) or a connect timeout (2 s), and is
// caught by it; the scheduling stalls of a 2-core machine running four nats-servers beside vigild
// (up to ~20 ms seen here; 90 ms once under ASan) are not.
constexpr int kBudgetMs = 200;

// A rig at 10x real time whose default stages raise every kind of stage event: band alarms,
// vibration features, AE hits and levels; status twice a second.
std::string rig_config(const std::string& rig, const std::string& servers, uint16_t event_port,
                       const std::string& more = "") {
  std::ostringstream c;
  c << "source:\n  kind: synthetic\n  rate_hz: 51200\n  channels: 4\n  chunk_frames: 1024\n  rate_factor: 10\n"
       "  seed: 7\n  signals:\n"
       "    - {sines: [{freq_hz: 49.5, amplitude: 0.05}], noise_rms: 0.01}\n"
       "    - {sines: [{freq_hz: 2400, amplitude: 0.03}], noise_rms: 0.01}\n"
       "    - {noise_rms: 0.01, impulses: {amplitude: 0.5, period_s: 0.25}}\n"
       "    - {noise_rms: 0.01, bursts: {amplitude: 0.6, freq_hz: 12000, decay_s: 0.005, rate_hz: 2}}\n"
    << "pipeline: {" << test::kRoomForStalls << ", deadline_budget_ms: " << kBudgetMs << "}\n"
    << "stages:\n"
       "  - {name: bands, kind: fir_bank, input: input, taps: 127, crossover_hz: [1000, 5000]}\n"
       "  - {name: band_alarm, kind: band_rms, input: bands, window_s: 0.05, threshold: 0.05, clear_threshold: 0.04}\n"
       "  - {name: vibration, kind: vibration, input: input, window_s: 1.0, hop_s: 0.5}\n"
       "  - {name: ae, kind: ae_hits, input: input, threshold_db: 106, full_scale_v: 1, preamp_gain_db: 0,"
       " hdt_us: 2000, hlt_us: 5000, level_interval_s: 1}\n"
       "outputs:\n"
       "  - {kind: events, destination: \"127.0.0.1:" << event_port << "\", status_interval_s: 0.5}\n"
       "  - kind: nats\n    servers: [" << servers << "]\n    rig: " << rig
    << "\n    status_interval_s: 0.5\n    ack_timeout_s: 1\n" << more;
  return c.str();
}

// The final status event of a run, and its fleet output's entry.
json final_status(const test::Received& r) {
  for (const json& e : r.events)
    if (e.value("type", "") == "status" && e.value("final", false)) return e;
  return json();
}
json fleet_output(const json& status) {
  for (const json& o : status.value("outputs", json::array()))
    if (o.value("kind", "") == "nats") return o;
  return json();
}

// The stream's messages read once through a fresh consumer: per (rig, run), how often each seq came.
std::map<std::pair<std::string, std::string>, std::map<uint64_t, int>> read_all(const std::string& url,
                                                                                  const std::string& stream,
                                                                                  uint64_t want) {
  FleetReaderOptions o;
  o.servers = {url};
  o.stream = stream;
  o.durable = "check" + std::to_string(std::random_device{}());
  FleetReader reader(o);
  std::map<std::pair<std::string, std::string>, std::map<uint64_t, int>> seen;
  uint64_t got = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int quiet = 0;
  while (std::chrono::steady_clock::now() < until && (got < want || quiet < 3)) {
    const size_t n = reader.fetch(512, 300, [&](const FleetReader::Message& m) {
      uint64_t seq = 0;
      std::string why;
      ASSERT_TRUE(parse_fleet_headers(m.rig, m.run, m.seq, seq, why)) << why;
      ++seen[{std::string(m.rig), std::string(m.run)}][seq];
      ++got;
    });
    quiet = n ? 0 : quiet + 1;
  }
  return seen;
}

// How many messages a stream holds (0 when it cannot be asked).
uint64_t stream_messages(const std::string& url, const std::string& stream, std::string* leader = nullptr) {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  jsStreamInfo* si = nullptr;
  uint64_t n = 0;
  if (natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK && natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
      js_GetStreamInfo(&si, js, stream.c_str(), nullptr, nullptr) == NATS_OK) {
    n = si->State.Msgs;
    if (leader && si->Cluster && si->Cluster->Leader) *leader = si->Cluster->Leader;
  }
  jsStreamInfo_Destroy(si);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return n;
}

// Every seq of one run from 0 to count-1 exactly once.
void expect_every_seq_once(const std::map<uint64_t, int>& seqs, uint64_t count, const std::string& what) {
  EXPECT_EQ(seqs.size(), count) << what;
  uint64_t expected = 0, twice = 0;
  for (const auto& [seq, n] : seqs) {
    EXPECT_EQ(seq, expected++) << what << ": a gap before seq " << seq;
    if (n != 1) ++twice;
    if (seq != expected - 1) break;
  }
  EXPECT_EQ(twice, 0u) << what << ": seqs stored more than once";
}

TEST(FleetCluster, EveryEventOnceAcrossALeaderDeathALinkCutAndALeafRestart) {
  REQUIRE_NATS_SERVER();
  TempDir dir("fleet-cluster");
  // Three central nodes: client, cluster and leaf ports.
  uint16_t client[3], route[3], leaf_port[3];
  for (int i = 0; i < 3; ++i) {
    client[i] = test::free_tcp_port();
    route[i] = test::free_tcp_port();
    leaf_port[i] = test::free_tcp_port();
  }
  std::string routes;
  for (int i = 0; i < 3; ++i) routes += (i ? ", " : "") + std::string("nats-route://127.0.0.1:") + std::to_string(route[i]);
  std::vector<std::unique_ptr<NatsServer>> nodes;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "n" + std::to_string(i + 1);
    nodes.push_back(std::make_unique<NatsServer>(
        dir.path / name,
        "cluster { name: central, listen: 127.0.0.1:" + std::to_string(route[i]) + ", routes: [" + routes + "] }\n"
        "leafnodes { listen: 127.0.0.1:" + std::to_string(leaf_port[i]) + " }",
        client[i], name, "central"));
  }
  for (auto& n : nodes) ASSERT_TRUE(n->start()) << n->log();
  test::TcpRelay link({leaf_port[0], leaf_port[1], leaf_port[2]});
  NatsServer leaf(dir.path / "leaf", "leafnodes { remotes: [ { urls: [\"nats-leaf://127.0.0.1:" +
                                         std::to_string(link.port()) + "\"] } ] }",
                  0, "leaf1", "edge1");
  ASSERT_TRUE(leaf.start()) << leaf.log();
  std::string central_urls;
  for (int i = 0; i < 3; ++i) central_urls += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(client[i]);
  // The central stream, made as the docs say, with the real vigil-listen (the cluster elects its
  // JetStream leader first: a few seconds).
  int made = -1;
  for (int attempt = 0; attempt < 30 && made != 0; ++attempt) {
    made = std::system((std::string(VIGIL_BIN_DIR) + "/vigil-listen --nats " + central_urls +
                        " --create-fleet-stream FLEET --source-domains edge1 --replicas 3 >/dev/null 2>&1").c_str());
    if (made != 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_EQ(made, 0) << "the central stream could not be made";

  test::UdpSocket data, events;
  const std::string config = dir.write("rig.yaml", rig_config("r1", "nats://127.0.0.1:" + std::to_string(leaf.port()),
                                                              events.port));
  test::VigildRun run(data, events, config, dir.file("vigild.log"), false);
  run.run_for(1500);
  std::string leader;
  stream_messages(nodes[0]->url(), "FLEET", &leader);
  ASSERT_FALSE(leader.empty()) << "the central stream has no leader";
  const int killed = leader[1] - '1';
  nodes[size_t(killed)]->kill();  // the central stream's leader dies
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  link.cut();  // the site's uplink goes
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  link.restore();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  leaf.kill();  // the box's own broker dies and comes back
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_TRUE(leaf.start()) << leaf.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(nodes[size_t(killed)]->start()) << nodes[size_t(killed)]->log();  // and the dead node
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(run.finish(SIGTERM), 0) << run.log;

  const json status = final_status(run.received), fleet = fleet_output(status);
  ASSERT_FALSE(fleet.is_null()) << run.log;
  const uint64_t accepted = fleet["accepted"].get<uint64_t>();
  std::printf("accepted %llu, published %llu, acknowledged %llu, resent %llu, duplicates %llu, disconnects %llu\n",
              (unsigned long long)accepted, (unsigned long long)fleet["published"].get<uint64_t>(),
              (unsigned long long)fleet["acknowledged"].get<uint64_t>(), (unsigned long long)fleet["resent"].get<uint64_t>(),
              (unsigned long long)fleet["duplicates"].get<uint64_t>(), (unsigned long long)fleet["disconnects"].get<uint64_t>());
  EXPECT_GT(accepted, 200u);
  EXPECT_EQ(fleet["dropped"], 0);
  EXPECT_GE(fleet["disconnects"].get<uint64_t>(), 1u);  // the leaf's death was seen
  // The service lost nothing to the broker's troubles.
  EXPECT_EQ(status["dropped_frames"], 0);
  EXPECT_EQ(status["output_dropped_frames"], 0);
  EXPECT_EQ(status["deadline_misses"], 0) << status["deadline_misses_by"].dump();
  // The final status is published after the last count it carries: the stream holds one more.
  const uint64_t want = accepted + 1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (stream_messages(nodes[0]->url(), "FLEET") < want && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto seen = read_all(nodes[0]->url(), "FLEET", want);
  ASSERT_EQ(seen.size(), 1u);
  expect_every_seq_once(seen.begin()->second, want, "rig r1");
  EXPECT_EQ(stream_messages(nodes[0]->url(), "FLEET"), want);  // no duplicate stored
  // The rig's presence, read centrally: its start and its latest status from the box's bucket.
  for (const std::string key : {"r1.start", "r1.status"}) {
    const std::string value = test::bucket_value(nodes[0]->url(), key, 10);
    ASSERT_FALSE(value.empty()) << key << " not in the central bucket";
    EXPECT_EQ(json::parse(value)["type"], key.substr(3)) << key;
  }
}

TEST(FleetTwoRigs, BothRigsReadByVigilListenWithNoGapThoughTheBrokerCameLate) {
  REQUIRE_NATS_SERVER();
  TempDir dir("fleet-two");
  NatsServer server(dir.path / "server");
  test::UdpSocket data1, events1, data2, events2;
  const std::string url = server.url();
  test::VigildRun r1(data1, events1, dir.write("r1.yaml", rig_config("r1", url, events1.port)), dir.file("r1.log"), false);
  test::VigildRun r2(data2, events2, dir.write("r2.yaml", rig_config("r2", url, events2.port)), dir.file("r2.log"), false);
  r1.run_for(1000);  // both run with no broker
  r2.run_for(0);
  ASSERT_TRUE(server.start()) << server.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ASSERT_EQ(r1.finish(SIGTERM), 0) << r1.log;
  ASSERT_EQ(r2.finish(SIGTERM), 0) << r2.log;
  std::map<std::string, uint64_t> accepted;
  for (auto* r : {&r1, &r2}) {
    const json f = fleet_output(final_status(r->received));
    ASSERT_FALSE(f.is_null()) << r->log;
    EXPECT_EQ(f["dropped"], 0);
    EXPECT_EQ(f["pending"], f["in_flight"]) << f.dump();  // nothing queued unsent at the end
    EXPECT_GE(f["connect_failures"].get<uint64_t>(), 1u);  // it tried while the broker was away
    accepted[f["rig"].get<std::string>()] = f["accepted"].get<uint64_t>() + 1;  // + the final status
  }
  // The real vigil-listen reads both rigs' events in order and says so.
  const std::string out = dir.file("listen.jsonl");
  test::Process listen({std::string(VIGIL_BIN_DIR) + "/vigil-listen", "--nats", url, "--json", "--seconds", "4",
                        "--durable", "t2"},
                       out);
  ASSERT_EQ(listen.wait(std::chrono::seconds(30)), 0);
  std::ifstream in(out);
  std::map<std::string, uint64_t> next;
  json summary;
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j["kind"] == "summary") summary = j;
    if (j["kind"] != "event") continue;
    const std::string rig = j["rig"];
    EXPECT_EQ(j["fleet_seq"].get<uint64_t>(), next[rig]++) << rig;  // each rig's in order
    EXPECT_TRUE(j["event"].contains("type"));
  }
  ASSERT_FALSE(summary.is_null());
  EXPECT_EQ(summary["malformed"], 0);
  for (const auto& [rig, count] : accepted) {
    EXPECT_EQ(next[rig], count) << rig;
    EXPECT_EQ(summary["rigs"][rig]["events"], count) << rig;
    EXPECT_EQ(summary["rigs"][rig]["gaps"], 0) << rig;
  }
}

TEST(FleetMqtt, PlantDashboardsReadTheEventsAsMqttTopics) {
  REQUIRE_NATS_SERVER();
  ASSERT_EQ(std::system("command -v mosquitto_sub >/dev/null"), 0)
      << "mosquitto_sub is not installed (scripts/install-deps.sh installs it: apt-get install mosquitto-clients)";
  TempDir dir("fleet-mqtt");
  const uint16_t mqtt = test::free_tcp_port();
  NatsServer server(dir.path / "server", "mqtt { listen: 127.0.0.1:" + std::to_string(mqtt) + " }", 0, "mq1");
  ASSERT_TRUE(server.start()) << server.log();
  const std::string out = dir.file("mqtt.txt");
  // QoS 1, as a dashboard that must not miss an alarm subscribes; 20 messages, then it exits.
  test::Process sub({"/bin/sh", "-c",
                     "exec mosquitto_sub -h 127.0.0.1 -p " + std::to_string(mqtt) +
                         " -q 1 -t 'vigil/r7/#' -v -C 20 -W 30 -i vigil-test"},
                    out);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  test::UdpSocket data, events;
  test::VigildRun run(data, events, dir.write("r7.yaml", rig_config("r7", server.url(), events.port)),
                      dir.file("r7.log"), false);
  ASSERT_EQ(sub.wait(std::chrono::seconds(40)), 0) << test::read_text(out);
  run.finish(SIGTERM);
  std::ifstream in(out);
  int lines = 0;
  std::set<std::string> topics;
  for (std::string line; std::getline(in, line); ++lines) {
    const size_t space = line.find(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::string topic = line.substr(0, space);
    const json ev = json::parse(line.substr(space + 1));
    EXPECT_EQ(topic, "vigil/r7/" + ev["type"].get<std::string>());  // vigil.r7.<type> as an MQTT topic
    topics.insert(topic);
  }
  EXPECT_EQ(lines, 20);
  EXPECT_TRUE(topics.count("vigil/r7/start")) << "the rig's start event first";
}

}  // namespace
}  // namespace vigil
