// A receiver on loopback for the sending benchmarks: a thread draining one UDP socket with
// recvmmsg and counting the datagrams (`got`), as fast as a receiver can. Header-only.
// With `gro`, the socket takes a sender's UDP GSO send whole (UDP_GRO; as vigil-listen does):
// each receive is then counted as the datagrams it holds.
#pragma once

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "wire/udp_gro.hpp"

namespace vigil::bench {

struct LoopbackReceiver {
  int fd = -1;
  uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> got{0};
  std::thread thread;

  explicit LoopbackReceiver(bool gro = false) {
    fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    if (gro) vigil::enable_udp_gro(fd);
    const int big = 64 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);  // root: past rmem_max
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    const timeval tv{0, 20000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    thread = std::thread([this] {
      std::vector<std::vector<char>> bufs(64, std::vector<char>(65536));
      std::vector<iovec> iov(64);
      std::vector<mmsghdr> msgs(64);
      std::vector<vigil::UdpGroControl> control(64);
      while (!stop.load(std::memory_order_relaxed)) {
        for (size_t i = 0; i < 64; ++i) {
          iov[i] = {bufs[i].data(), bufs[i].size()};
          msgs[i] = {};
          msgs[i].msg_hdr.msg_iov = &iov[i];
          msgs[i].msg_hdr.msg_iovlen = 1;
          msgs[i].msg_hdr.msg_control = control[i].bytes;
          msgs[i].msg_hdr.msg_controllen = sizeof control[i].bytes;
        }
        // MSG_WAITFORONE: return what has come once one has (a blocking call would wait for all 64).
        const int n = ::recvmmsg(fd, msgs.data(), 64, MSG_WAITFORONE, nullptr);
        uint64_t datagrams = 0;
        for (int i = 0; i < n; ++i)
          datagrams += vigil::udp_datagrams_in(msgs[size_t(i)].msg_len, vigil::udp_gro_segment(msgs[size_t(i)].msg_hdr));
        if (n > 0) got.fetch_add(datagrams, std::memory_order_relaxed);
      }
    });
  }
  ~LoopbackReceiver() {
    stop = true;
    thread.join();
    ::close(fd);
  }
};

}  // namespace vigil::bench
