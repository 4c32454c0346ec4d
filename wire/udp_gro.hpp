// Receiving with UDP GRO (Linux >= 5.0). With UDP_GRO on a socket, the kernel hands over the
// datagrams of one sender's UDP GSO send (and those a NIC's GRO coalesced) as one receive: all
// `segment` bytes long but the last, which may be shorter, and the segment size in a control
// message. On loopback the sender's system call delivers to the receiver's socket, so one
// coalesced delivery instead of one per datagram is time off the sender's clock too.
// The kernel's drop count (SO_RXQ_OVFL) then counts coalesced receives, not datagrams: a
// receiver that must account for every datagram dropped leaves GRO off. Header-only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_GRO
#define UDP_GRO 104  // linux/udp.h, Linux >= 5.0
#endif

namespace vigil {

// False where the kernel does not offer it (the socket then receives datagram by datagram).
inline bool enable_udp_gro(int fd) noexcept {
  const int on = 1;
  return ::setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
}

// Room for the control messages a receive may carry: the segment size and SO_RXQ_OVFL's count.
struct UdpGroControl {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t))];
};

// The segment size of a coalesced receive, from its control messages; 0 for a single datagram.
inline size_t udp_gro_segment(const msghdr& msg) noexcept {
  if (!msg.msg_control) return 0;
  for (const cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(c)))
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int segment = 0;
      std::memcpy(&segment, CMSG_DATA(c), sizeof segment);
      return segment > 0 ? size_t(segment) : 0;
    }
  return 0;
}

// How many datagrams a receive of `bytes` holds.
inline size_t udp_datagrams_in(size_t bytes, size_t segment) noexcept {
  if (segment == 0 || bytes <= segment) return 1;
  return (bytes + segment - 1) / segment;
}

// Calls f(pointer, length) for each datagram of a receive, in the order they were sent.
template <class F>
void for_each_udp_datagram(const uint8_t* data, size_t bytes, size_t segment, F&& f) {
  if (segment == 0 || bytes <= segment) {
    f(data, bytes);
    return;
  }
  for (size_t at = 0; at < bytes; at += segment) f(data + at, bytes - at < segment ? bytes - at : segment);
}

}  // namespace vigil
