#include "wire/udp_receiver.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace vigil {
namespace {

// Joins the multicast group `fd` is bound to on `interface` ("": the route's; an IPv4 address or a
// name). Returns false with why.
bool join_group(int fd, const addrinfo& group, const std::string& interface, std::string& why) {
  if (group.ai_family == AF_INET6) {
    ipv6_mreq m{};
    m.ipv6mr_multiaddr = reinterpret_cast<const sockaddr_in6*>(group.ai_addr)->sin6_addr;
    m.ipv6mr_interface = interface.empty() ? 0 : if_nametoindex(interface.c_str());
    if (!interface.empty() && m.ipv6mr_interface == 0) {
      why = "interface '" + interface + "': no such interface (an IPv6 group takes a name)";
      return false;
    }
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof m) == 0) return true;
  } else {
    ip_mreqn m{};
    m.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(group.ai_addr)->sin_addr;
    if (!interface.empty() && inet_pton(AF_INET, interface.c_str(), &m.imr_address) != 1 &&
        (m.imr_ifindex = int(if_nametoindex(interface.c_str()))) == 0) {
      why = "interface '" + interface + "': neither an IPv4 address nor an interface";
      return false;
    }
    if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) == 0) return true;
  }
  why = "cannot join the multicast group" + (interface.empty() ? std::string() : " on " + interface) + ": " +
        std::strerror(errno);
  return false;
}

}  // namespace

// A UDP socket bound to bind_addr:port: an IPv4 or IPv6 address, or a name (its IPv4 address if it
// has one). "::" takes IPv4 senders too (dual stack). A multicast group is joined (on `interface`),
// with the port shared, so that several receivers on this host each get every datagram. Returns -2
// when bind_addr is no address (a usage error), -1 when the socket cannot be had; why says which.
int open_udp_receiver(const std::string& bind_addr, uint16_t port, int buffer_bytes, const std::string& interface,
             std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(bind_addr.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    why = "'" + bind_addr + "': " + gai_strerror(rc) + " (give an IPv4 or IPv6 address, or a name)";
    return -2;
  }
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> own(found, freeaddrinfo);
  // A name's IPv4 address first, as vigild resolves its destinations ("localhost": 127.0.0.1).
  for (addrinfo* a = found; a; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      found = a;
      break;
    }
  const int fd = socket(found->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  const int off = 0, on = 1;
  if (found->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  // Large receive buffers ride out bursts; FORCE works as root, the plain option up to rmem_max.
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof buffer_bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
  // The kernel's count of datagrams it dropped for a full buffer comes with each datagram.
  setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
  const sockaddr* at = found->ai_addr;
  const bool multicast = found->ai_family == AF_INET6
                             ? IN6_IS_ADDR_MULTICAST(&reinterpret_cast<const sockaddr_in6*>(at)->sin6_addr)
                             : IN_MULTICAST(ntohl(reinterpret_cast<const sockaddr_in*>(at)->sin_addr.s_addr));
  if (multicast) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    why = "cannot bind " + bind_addr + " port " + std::to_string(port) + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  if (multicast ? !join_group(fd, *found, interface, why) : !interface.empty()) {
    if (!multicast) why = "an interface is for a multicast group (one to join), not " + bind_addr;
    close(fd);
    return multicast ? -1 : -2;
  }
  return fd;
}

}  // namespace vigil
