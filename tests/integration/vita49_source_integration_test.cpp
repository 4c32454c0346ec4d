// One real vigild's VITA 49 output as another real vigild's source, through a relay in the test
// that drops chosen data packets on the way: the second one's samples are the first one's to the
// bit at the same times, and exactly the dropped packets' frames are counted lost.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "../support/ports.hpp"
#include "../support/process.hpp"
#include "../support/temp_dir.hpp"
#include "../support/vigild_run.hpp"
#include "wire/vita49.hpp"

namespace vigil {
namespace {

using nlohmann::json;

constexpr double kRate = 51200;

// Forwards every datagram from its port to `to`, but the data packets listed (stream, n-th data
// packet of that stream from 0); records every data packet it saw (the sender's samples).
class DroppingRelay {
 public:
  DroppingRelay(uint16_t to, std::set<std::pair<uint32_t, uint64_t>> drop) : drop_(std::move(drop)) {
    to_.sin_family = AF_INET;
    to_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to_.sin_port = htons(to);
    thread_ = std::thread([this] { run(); });
  }
  ~DroppingRelay() { stop(); }
  uint16_t port() const { return in_.port; }
  struct Stream {
    __int128 first_ps = -1;
    std::vector<float> samples;  // in order, as sent
    uint64_t packets = 0, dropped_samples = 0, dropped_packets = 0;
    uint64_t first_dropped_frame = UINT64_MAX;  // where the first dropped packet's samples began
  };
  std::map<uint32_t, Stream> streams;  // read after stop()
  void stop() {
    if (!stop_.exchange(true)) thread_.join();
  }

 private:
  void run() {
    std::vector<uint8_t> buf(65536);
    while (!stop_) {
      pollfd p{in_.fd, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      for (;;) {
        const ssize_t n = recv(in_.fd, buf.data(), buf.size(), 0);
        if (n < 0) break;
        vita49::Decoded d;
        if (vita49::decode(buf.data(), size_t(n), d) && d.type == vita49::PacketType::kSignalDataWithStreamId) {
          Stream& s = streams[d.stream_id];
          if (s.first_ps < 0) s.first_ps = __int128(d.ts_int) * 1'000'000'000'000 + d.ts_frac;
          for (size_t i = 0; i < d.samples; ++i) s.samples.push_back(d.sample(i));
          if (drop_.count({d.stream_id, s.packets++})) {
            s.first_dropped_frame = std::min<uint64_t>(s.first_dropped_frame, s.samples.size() - d.samples);
            s.dropped_samples += d.samples;
            ++s.dropped_packets;
            continue;
          }
        }
        sendto(out_.fd, buf.data(), size_t(n), 0, reinterpret_cast<const sockaddr*>(&to_), sizeof to_);
      }
    }
  }
  test::UdpSocket in_, out_;
  sockaddr_in to_{};
  std::set<std::pair<uint32_t, uint64_t>> drop_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(Vita49SourceIntegration, AnotherVigildsOutputArrivesExactlyAndDroppedPacketsAreFramesLost) {
  test::TempDir dir("vita49-src");
  const uint16_t listen = test::free_udp_port();
  // Stream ids of vigild's first data output, band 0: the channel (docs/PROTOCOL.md).
  // Past the first second (the sender sends about 200 packets a second a stream), so that the
  // receiver's line has begun even where it starts slowly (under qemu it began 0.22 s in).
  DroppingRelay relay(listen, {{0, 300}, {0, 301}, {1, 420}});
  // The sender: synthetic, paced, its input sent to the relay with a context packet every 0.2 s.
  const std::string sender = dir.write("sender.yaml", R"(source:
  kind: synthetic
  rate_hz: 51200
  channels: 2
  format: int16
  chunk_frames: 512
  seed: 5
  signals:
    - sines: [{freq_hz: 440, amplitude: 0.5}]
      noise_rms: 0.05
    - noise_rms: 0.2
outputs:
  - kind: vita49
    stream: input
    context_interval_s: 0.2
    destination: 127.0.0.1:)" + std::to_string(relay.port()) + "\n");
  test::UdpSocket data, events;
  const std::string receiver = dir.write("receiver.yaml", R"(source:
  kind: vita49
  listen: 127.0.0.1:)" + std::to_string(listen) + R"(
  streams: [0x00000000, 0x00000001]
  rate_hz: 51200
  chunk_frames: 512
  max_wait_s: 0.2
  start_timeout_s: 20
)" + test::room_for_stalls() + R"(outputs:
  - kind: vita49
    stream: input
    destination: 127.0.0.1:)" + std::to_string(data.port) + R"(
  - kind: events
    destination: 127.0.0.1:)" + std::to_string(events.port) + "\n");
  // The receiver first: it waits for the sender's context packets.
  test::VigildRun rx(data, events, receiver, dir.file("receiver.log"), true, true);
  test::Process tx({"/bin/sh", "-c", std::string(VIGIL_BIN_DIR) + "/vigild --config " + sender +
                                         " --seconds 3 --log-interval 0 2>" + dir.file("sender.log")});
  ASSERT_EQ(tx.wait(std::chrono::seconds(20)), 0) << test::read_text(dir.file("sender.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the last chunk's wait
  ASSERT_EQ(rx.finish(SIGTERM), 0) << rx.log;
  relay.stop();

  json status;
  for (const json& e : rx.received.events)
    if (e.value("type", "") == "status" && e.value("final", false)) status = e;
  ASSERT_FALSE(status.is_null()) << rx.log;
  const json& src = status["source"];
  EXPECT_EQ(src["kind"], "vita49");
  uint64_t dropped = 0;
  for (const auto& [id, s] : relay.streams) dropped += s.dropped_samples;
  ASSERT_EQ(relay.streams.size(), 2u);
  EXPECT_EQ(relay.streams.at(0).dropped_packets, 2u);
  EXPECT_EQ(relay.streams.at(1).dropped_packets, 1u);
  EXPECT_EQ(src["packets_lost"], 3) << src.dump();
  EXPECT_EQ(src["frames_lost"], dropped) << src.dump();
  EXPECT_EQ(src["overruns"], 2) << src.dump();  // two holes
  EXPECT_EQ(src["missing_samples"], 0) << src.dump();
  EXPECT_EQ(status["dropped_frames"], 0);

  // Every sample the receiver sent on is the sender's sample of the same frame, to the bit.
  for (uint32_t c = 0; c < 2; ++c) {
    const DroppingRelay::Stream& sent = relay.streams.at(c);
    const auto& packets = rx.received.timestamps.at(c);   // the receiver's own output: same ids
    const std::vector<float>& got = rx.received.samples.at(c);
    size_t at = 0;
    uint64_t frames = 0;
    ASSERT_FALSE(packets.empty());
    // The receiver's line starts at the first packet after its start (what came while it read
    // the context packets is not on it).
    const int64_t first = std::llround(double(packets.front().first - sent.first_ps) * kRate / 1e12);
    for (const auto& [ts, n] : packets) {
      const double offset = double(ts - sent.first_ps) * kRate / 1e12;
      const int64_t frame = std::llround(offset);
      ASSERT_NEAR(offset, double(frame), 1e-6) << "channel " << c << ": a packet between frames";
      ASSERT_GE(frame, 0);
      ASSERT_LE(size_t(frame) + n, sent.samples.size()) << "channel " << c;
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[at + i], sent.samples[size_t(frame) + i]) << "channel " << c << " frame " << frame + int64_t(i);
      at += n;
      frames += n;
    }
    std::printf("channel %u: %zu frames sent, the receiver's line from frame %lld: %llu frames on, %llu lost\n", c,
                sent.samples.size(), (long long)first, (unsigned long long)frames, (unsigned long long)dropped);
    // All the sender's frames from there on but the lost ones went on.
    const uint64_t first_drop = std::min(relay.streams.at(0).first_dropped_frame, relay.streams.at(1).first_dropped_frame);
    ASSERT_LT(uint64_t(first), first_drop) << "the receiver's line began after the first dropped packet";
    EXPECT_EQ(uint64_t(first) + frames + dropped, sent.samples.size()) << "channel " << c;
  }
}

}  // namespace
}  // namespace vigil
