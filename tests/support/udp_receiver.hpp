// Receiving vigild's output in a test: UDP sockets on loopback with large buffers, and a thread
// body that decodes every data datagram (VITA 49, StreamMonitor) and keeps every event.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "wire/event_line.hpp"
#include "wire/stream_monitor.hpp"
#include "wire/vita49.hpp"
#include "wire/vrl_frame.hpp"

namespace vigil::test {

struct UdpSocket {
  int fd = -1;
  uint16_t port = 0;
  // port 0: the kernel picks a free one (read it from `port`).
  explicit UdpSocket(uint16_t want_port = 0) {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    const int want = 16 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(want_port);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~UdpSocket() { close(fd); }
};


struct Received {
  std::atomic<bool> started{false};  // the first event (`start`) has arrived (see wait_for_start)
  std::atomic<uint64_t> reloads{0};   // `reload` events so far (readable while receiving)
  StreamMonitor monitor;
  std::vector<nlohmann::json> events;
  bool keep_timestamps = true;  // false for long runs: the list grows by one entry per packet
  std::map<uint32_t, std::vector<std::pair<__int128, size_t>>> timestamps;  // per stream: ts, samples
  bool keep_samples = false;  // true: every sample of every stream, in arrival order
  std::map<uint32_t, std::vector<float>> samples;
  uint64_t malformed = 0;
  uint64_t datagrams = 0;   // data datagrams: packets, or VRL frames of packets
  uint64_t vrl_frames = 0;
  uint64_t event_datagrams = 0;
  std::vector<std::pair<uint16_t, uint16_t>> frame_counts;  // each VRL frame's (source port, count), in arrival order
};

// Timings in these tests count from vigild's start event, not from the spawn: making a GPU's
// context and plans takes a second or more before the first chunk. Gives up after 10 s.
void wait_for_start(const Received& r) {
  for (int i = 0; i < 1000 && !r.started.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void receive(UdpSocket& data, UdpSocket& events, Received& r, std::atomic<bool>& stop) {
  std::vector<uint8_t> buf(65536);
  pollfd fds[2] = {{data.fd, POLLIN, 0}, {events.fd, POLLIN, 0}};
  int quiet_polls = 0;
  // After `stop`, keep reading until the sockets stay empty for 200 ms.
  while (!stop.load() || quiet_polls < 4) {
    const int n = poll(fds, 2, 50);
    if (n <= 0) {
      if (stop.load()) ++quiet_polls;
      continue;
    }
    quiet_polls = 0;
    for (;;) {
      sockaddr_in from{};
      socklen_t from_len = sizeof from;
      const ssize_t len = recvfrom(data.fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (len < 0) break;
      ++r.datagrams;
      vrl::FrameInfo frame;
      const bool whole = vrl::for_each_packet(
          buf.data(), size_t(len),
          [&](const uint8_t* packet, size_t bytes) {
            vita49::Decoded d;
            if (!vita49::decode(packet, bytes, d)) {
              ++r.malformed;
              return;
            }
            r.monitor.on_packet(d);
            if (r.keep_timestamps && d.type == vita49::PacketType::kSignalDataWithStreamId)
              r.timestamps[d.stream_id].push_back({__int128(d.ts_int) * 1'000'000'000'000 + d.ts_frac, d.samples});
            if (r.keep_samples && d.type == vita49::PacketType::kSignalDataWithStreamId)
              for (size_t i = 0; i < d.samples; ++i) r.samples[d.stream_id].push_back(d.sample(i));
          },
          &frame);
      if (!whole) ++r.malformed;
      if (frame.packets) {
        ++r.vrl_frames;
        r.frame_counts.push_back({ntohs(from.sin_port), frame.frame_count});
      }
    }
    for (;;) {
      const ssize_t len = recv(events.fd, buf.data(), buf.size(), 0);
      if (len < 0) break;
      ++r.event_datagrams;
      // One event a datagram, or several, one a line (framing: lines), read as vigil-listen does.
      for_each_event(buf.data(), size_t(len), [&](const uint8_t* text, size_t bytes, nlohmann::json* ev) {
        if (!ev) {
          ADD_FAILURE() << "not an event: " << std::string(reinterpret_cast<const char*>(text), bytes);
          return;
        }
        r.events.push_back(std::move(*ev));
        if (r.events.back()["type"] == "reload") r.reloads.fetch_add(1);
      });
      r.started.store(true);
    }
  }
}

}  // namespace vigil::test
