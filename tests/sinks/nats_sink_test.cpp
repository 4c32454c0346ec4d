// NatsSink against a real nats-server on loopback (started here): every event once, with its
// subject, id and text; a broker absent at start, restarted, refusing the credentials; the bound.
#include "sinks/nats_sink.hpp"

#include <gtest/gtest.h>
#include <nats/nats.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "../support/nats_server.hpp"
#include "../support/temp_dir.hpp"
#include "wire/datagram_batch.hpp"
#include "wire/fleet_order.hpp"
#include "wire/fleet_reader.hpp"

namespace vigil {
namespace {

using test::NatsServer;
using test::TempDir;

// nats-server is a test dependency like GoogleTest (scripts/deps-debian.txt): its absence fails.
#define REQUIRE_NATS_SERVER()                                                                           \
  ASSERT_FALSE(test::nats_server_path().empty())                                                      \
      << "nats-server is not installed (scripts/install-deps.sh installs it: apt-get install nats-server)"

struct Read {
  std::string subject, rig, run, text;
  uint64_t seq;
};

// Everything on the stream for `subject`, through a fresh consumer, until `want` came or 20 s.
std::vector<Read> read_stream(const std::string& url, size_t want, const std::string& subject = "vigil.>",
                              const std::string& stream = "VIGIL") {
  FleetReaderOptions o;
  o.servers = {url};
  o.stream = stream;
  o.subject = subject;
  o.durable = "test" + std::to_string(std::random_device{}());
  FleetReader reader(o);
  std::vector<Read> out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (out.size() < want && std::chrono::steady_clock::now() < until)
    reader.fetch(256, 200, [&](const FleetReader::Message& m) {
      uint64_t seq = 0;
      std::string why;
      EXPECT_TRUE(parse_fleet_headers(m.rig, m.run, m.seq, seq, why)) << why;
      out.push_back({std::string(m.subject), std::string(m.rig), std::string(m.run), std::string(m.text), seq});
    });
  reader.fetch(256, 300, [&](const FleetReader::Message& m) {  // nothing more may come
    out.push_back({std::string(m.subject), std::string(m.rig), std::string(m.run), std::string(m.text), 0});
  });
  return out;
}

std::string event_text(const std::string& type, uint64_t i) {
  return R"({"type":")" + type + R"(","seq":)" + std::to_string(i) + R"(,"time":"2026-11-29T00:00:00Z","v":)" +
         std::to_string(std::mt19937(uint32_t(i))()) + "}";
}

FleetOutputSettings settings_for(const NatsServer& s, const std::string& rig) {
  FleetOutputSettings f;
  f.servers = {s.url()};
  f.rig = rig;
  f.ack_timeout_s = 1;
  return f;
}

uint64_t count_of(const SinkStatus& s, const std::string& name) {
  for (const auto& [n, v] : s.counts)
    if (name == n) return v;
  ADD_FAILURE() << "no count " << name;
  return 0;
}
std::string fact_of(const SinkStatus& s, const std::string& name) {
  for (const auto& [n, v] : s.facts)
    if (name == n) return v;
  ADD_FAILURE() << "no fact " << name;
  return "";
}

TEST(NatsSink, EveryEventOnceWithItsSubjectIdAndTextInOrder) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-every");
  NatsServer server(dir.path);
  ASSERT_TRUE(server.start()) << server.log();
  SinkCounters counters;
  const std::vector<std::string> types = {"alarm", "ae_hit", "vibration", "health", "status"};
  std::vector<std::string> sent_text, sent_type;
  {
    NatsSink sink(settings_for(server, "rig_1"), "run7", counters);
    // One at a time, and in batches as the output thread hands a pass's events.
    DatagramBatch batch(64, 512);
    std::vector<std::string_view> batch_types;
    for (uint64_t i = 0; i < 600; ++i) {
      const std::string type = types[i % types.size()], text = event_text(type, i);
      sent_text.push_back(text);
      sent_type.push_back(type);
      if (i < 300) {
        sink.send_event(type, text);
        continue;
      }
      std::memcpy(batch.next(), text.data(), text.size());
      batch.commit(text.size());
      batch_types.push_back(types[i % types.size()]);
      if (batch.full()) {
        sink.send_events({batch, batch_types});
        batch.clear();
        batch_types.clear();
      }
    }
    if (batch.size()) sink.send_events({batch, batch_types});
    ASSERT_TRUE(sink.wait_acknowledged(20));
    const SinkStatus st = sink.describe();
    EXPECT_EQ(count_of(st, "accepted"), 600u);
    EXPECT_EQ(count_of(st, "acknowledged"), 600u);
    EXPECT_EQ(count_of(st, "dropped"), 0u);
    EXPECT_EQ(count_of(st, "pending"), 0u);
    EXPECT_EQ(count_of(st, "stream_replicas"), 1u);
    EXPECT_EQ(fact_of(st, "state"), "connected");
    EXPECT_EQ(fact_of(st, "subject_prefix"), "vigil.rig_1");
  }
  const std::vector<Read> got = read_stream(server.url(), 600);
  ASSERT_EQ(got.size(), 600u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, i);
    EXPECT_EQ(got[i].rig, "rig_1");
    EXPECT_EQ(got[i].run, "run7");
    EXPECT_EQ(got[i].subject, "vigil.rig_1." + sent_type[i]);
    EXPECT_EQ(got[i].text, sent_text[i]);
  }
}

TEST(NatsSink, OnlyTheSelectedTypesAndThePresenceInTheBucket) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-types");
  NatsServer server(dir.path);
  ASSERT_TRUE(server.start()) << server.log();
  SinkCounters counters;
  FleetOutputSettings f = settings_for(server, "r2");
  f.types = {"alarm"};
  {
    NatsSink sink(f, "run1", counters);
    sink.send_event("start", event_text("start", 0));
    for (uint64_t i = 1; i <= 10; ++i) sink.send_event(i % 2 ? "alarm" : "ae_hit", event_text(i % 2 ? "alarm" : "ae_hit", i));
    sink.send_event("status", event_text("status", 11));
    ASSERT_TRUE(sink.wait_acknowledged(20));
    EXPECT_EQ(count_of(sink.describe(), "accepted"), 5u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the bucket is put after the publishing
  }
  const std::vector<Read> got = read_stream(server.url(), 5);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].subject, "vigil.r2.alarm");
    EXPECT_EQ(got[i].seq, i);  // the output's own sequence: no gap for the types it leaves out
    EXPECT_EQ(got[i].text, event_text("alarm", 2 * i + 1));
  }
  // The rig's start and status in vigil_rigs, whatever the types.
  EXPECT_EQ(test::bucket_value(server.url(), "r2.start"), event_text("start", 0));
  EXPECT_EQ(test::bucket_value(server.url(), "r2.status"), event_text("status", 11));
}

// The output thread settles its sinks before the final report: a connected fleet output then
// reports a burst just handed to it as acknowledged, not pending; one without a broker does not wait.
TEST(NatsSink, SettlingBeforeTheFinalReportDeliversWhatWasQueuedOnlyWhenConnected) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-settle");
  NatsServer server(dir.path);
  SinkCounters counters;
  {
    NatsSink away(settings_for(server, "rig_a"), "run1", counters);  // the server is not started yet
    for (uint64_t i = 0; i < 50; ++i) away.send_event("alarm", event_text("alarm", i));
    const auto t0 = std::chrono::steady_clock::now();
    away.settle();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
    EXPECT_EQ(count_of(away.describe(), "pending"), 50u);
  }
  ASSERT_TRUE(server.start()) << server.log();
  NatsSink sink(settings_for(server, "rig_b"), "run2", counters);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (fact_of(sink.describe(), "state") != "connected" && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(fact_of(sink.describe(), "state"), "connected") << fact_of(sink.describe(), "last_error");
  for (uint64_t i = 0; i < 2000; ++i) sink.send_event("ae_hit", event_text("ae_hit", i));
  sink.settle();
  const SinkStatus st = sink.describe();
  EXPECT_EQ(count_of(st, "pending"), 0u);
  EXPECT_EQ(count_of(st, "acknowledged"), 2000u);
}

TEST(NatsSink, BrokerAbsentAtStartQueuesAndDropsTheOldestBeyondTheBound) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-absent");
  NatsServer server(dir.path);  // not started yet
  SinkCounters counters;
  FleetOutputSettings f = settings_for(server, "late");
  f.queue_events = 40;
  NatsSink sink(f, "run1", counters);
  for (uint64_t i = 0; i < 100; ++i) sink.send_event("alarm", event_text("alarm", i));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  SinkStatus st = sink.describe();
  EXPECT_EQ(fact_of(st, "state"), "connecting");
  EXPECT_GE(count_of(st, "connect_failures"), 1u);
  EXPECT_EQ(count_of(st, "dropped"), 60u);  // the oldest 60 went; the newest 40 wait
  EXPECT_EQ(count_of(st, "pending"), 40u);
  EXPECT_NE(fact_of(st, "last_error"), "");
  ASSERT_TRUE(server.start()) << server.log();
  ASSERT_TRUE(sink.wait_acknowledged(20)) << fact_of(sink.describe(), "last_error");
  st = sink.describe();
  EXPECT_EQ(count_of(st, "acknowledged"), 40u);
  EXPECT_EQ(fact_of(st, "state"), "connected");
  const std::vector<Read> got = read_stream(server.url(), 40);
  ASSERT_EQ(got.size(), 40u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].seq, 60 + i);
}

TEST(NatsSink, AServerKilledAndRestartedLosesNothingAndDuplicatesNothing) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-restart");
  NatsServer server(dir.path);
  ASSERT_TRUE(server.start()) << server.log();
  SinkCounters counters;
  constexpr uint64_t kEvents = 3000;
  {
    NatsSink sink(settings_for(server, "rs"), "run1", counters);
    std::thread killer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      // Frozen first, so that messages are in flight, unacknowledged, when it dies.
      server.freeze();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      server.kill();
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      EXPECT_TRUE(server.start()) << server.log();
    });
    for (uint64_t i = 0; i < kEvents; ++i) {  // ~2 s of events at 1 500 a second
      sink.send_event("ae_hit", event_text("ae_hit", i));
      std::this_thread::sleep_for(std::chrono::microseconds(666));
    }
    killer.join();
    ASSERT_TRUE(sink.wait_acknowledged(30)) << fact_of(sink.describe(), "last_error");
    const SinkStatus st = sink.describe();
    EXPECT_EQ(count_of(st, "dropped"), 0u);
    EXPECT_GE(count_of(st, "disconnects"), 1u);
    EXPECT_GE(count_of(st, "resent"), 1u);  // what the frozen server never acknowledged went again
    std::printf("published %llu, resent %llu, duplicates %llu\n", (unsigned long long)count_of(st, "published"),
                (unsigned long long)count_of(st, "resent"), (unsigned long long)count_of(st, "duplicates"));
  }
  const std::vector<Read> got = read_stream(server.url(), kEvents);
  std::vector<int> seen(kEvents, 0);
  for (const Read& r : got) {
    ASSERT_LT(r.seq, kEvents);
    ++seen[r.seq];
  }
  for (uint64_t i = 0; i < kEvents; ++i) EXPECT_EQ(seen[i], 1) << "seq " << i;
}

TEST(NatsSink, AServerThatLostItsStreamGetsItMadeAgain) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-wiped");
  NatsServer server(dir.path);
  ASSERT_TRUE(server.start()) << server.log();
  SinkCounters counters;
  NatsSink sink(settings_for(server, "wiped"), "run1", counters);
  for (uint64_t i = 0; i < 10; ++i) sink.send_event("alarm", event_text("alarm", i));
  ASSERT_TRUE(sink.wait_acknowledged(20));
  server.stop();
  std::filesystem::remove_all(dir.path / "store");  // a server rebuilt from scratch
  ASSERT_TRUE(server.start()) << server.log();
  for (uint64_t i = 10; i < 20; ++i) sink.send_event("alarm", event_text("alarm", i));
  ASSERT_TRUE(sink.wait_acknowledged(30)) << fact_of(sink.describe(), "last_error");
  const std::vector<Read> got = read_stream(server.url(), 10);
  ASSERT_EQ(got.size(), 10u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].seq, 10 + i);
  // The bucket is made again too: the rig's next status is there.
  sink.send_event("status", event_text("status", 99));
  EXPECT_EQ(test::bucket_value(server.url(), "wiped.status", 10), event_text("status", 99))
      << fact_of(sink.describe(), "last_error");
}

TEST(NatsSink, WrongCredentialsAreAStateAndAnErrorNotACrash) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-auth");
  NatsServer server(dir.path, "authorization { user: vigil, password: right }");
  ASSERT_TRUE(server.start()) << server.log();
  SinkCounters counters;
  FleetOutputSettings f = settings_for(server, "auth");
  f.user = "vigil";
  f.password = "wrong";
  {
    NatsSink sink(f, "run1", counters);
    sink.send_event("alarm", event_text("alarm", 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    const SinkStatus st = sink.describe();
    EXPECT_EQ(fact_of(st, "state"), "refused");
    EXPECT_NE(fact_of(st, "last_error").find("uthorization"), std::string::npos) << fact_of(st, "last_error");
    EXPECT_GE(count_of(st, "connect_failures"), 1u);
    EXPECT_EQ(count_of(st, "pending"), 1u);
  }
  f.password = "right";
  NatsSink sink(f, "run2", counters);
  sink.send_event("alarm", event_text("alarm", 0));
  EXPECT_TRUE(sink.wait_acknowledged(20)) << fact_of(sink.describe(), "last_error");
}

TEST(NatsSink, TlsWithACaTheTestMadeAndNoneWithoutIt) {
  REQUIRE_NATS_SERVER();
  TempDir dir("nats-tls");
  const std::string d = dir.path.string();
  // A CA, and a server certificate for 127.0.0.1 signed by it (openssl, as an operator would).
  const std::string make =
      "cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=vigil-test-ca"
      " 2>/dev/null && openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1"
      " 2>/dev/null && printf 'subjectAltName=IP:127.0.0.1' > ext.cnf && openssl x509 -req -in server.csr -CA ca.pem"
      " -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile ext.cnf 2>/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << "openssl could not make the test CA";
  NatsServer server(dir.path, "tls { cert_file: \"" + d + "/server.pem\", key_file: \"" + d + "/server.key\" }");
  ASSERT_TRUE(server.start()) << server.log();
  SinkCounters counters;
  FleetOutputSettings f = settings_for(server, "tls");
  {
    NatsSink sink(f, "run1", counters);  // no CA: the server's certificate cannot be trusted
    sink.send_event("alarm", event_text("alarm", 0));
    // Until the refused handshake is reported (under qemu it took longer than 800 ms).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (fact_of(sink.describe(), "last_error").empty() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const SinkStatus st = sink.describe();
    EXPECT_NE(fact_of(st, "state"), "connected");
    EXPECT_EQ(count_of(st, "acknowledged"), 0u);
    EXPECT_NE(fact_of(st, "last_error"), "");
  }
  f.ca = d + "/ca.pem";
  NatsSink sink(f, "run2", counters);
  for (uint64_t i = 0; i < 20; ++i) sink.send_event("alarm", event_text("alarm", i));
  ASSERT_TRUE(sink.wait_acknowledged(20)) << fact_of(sink.describe(), "last_error");
  EXPECT_EQ(count_of(sink.describe(), "acknowledged"), 20u);
}

}  // namespace
}  // namespace vigil
