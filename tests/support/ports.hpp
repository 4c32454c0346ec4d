// Free loopback ports for a binary under test to take (bound here with port 0, then released).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace vigil::test {

// socktype: SOCK_DGRAM or SOCK_STREAM.
inline uint16_t free_port(int socktype) {
  const int fd = socket(AF_INET, socktype, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

inline uint16_t free_udp_port() { return free_port(SOCK_DGRAM); }
inline uint16_t free_tcp_port() { return free_port(SOCK_STREAM); }

}  // namespace vigil::test
