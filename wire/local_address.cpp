#include "wire/local_address.hpp"

#include "wire/udp_sender.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vigil {

namespace {

// Binds a throwaway socket of `type` to `address` (port 0): the test the real bind will face.
NameLookup try_bind(const sockaddr* address, socklen_t length, int type, std::string& why) {
  const int fd = socket(address->sa_family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    why = std::strerror(errno);
    return NameLookup::kNotFound;
  }
  const int rc = bind(fd, address, length), err = errno;
  close(fd);
  if (rc == 0) return NameLookup::kResolved;
  why = err == EADDRNOTAVAIL ? "not an address of this machine yet" : std::strerror(err);
  return err == EADDRNOTAVAIL ? NameLookup::kTryAgain : NameLookup::kNotFound;
}

// The interface `interface` names (an IPv4 address: the one holding it; else its name), as
// getifaddrs(3) lists it: kResolved when there, kTryAgain when not, kNotFound when the list cannot
// be had (why: its error). `up`: whether it is up.
NameLookup find_interface(const std::string& interface, bool& up, std::string& why) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) {
    why = std::strerror(errno);
    return NameLookup::kNotFound;
  }
  in_addr v4{};
  const bool by_address = inet_pton(AF_INET, interface.c_str(), &v4) == 1;
  const ifaddrs* found = nullptr;
  for (const ifaddrs* a = all; a && !found; a = a->ifa_next)
    if (by_address ? a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
                         reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == v4.s_addr
                   : interface == a->ifa_name)
      found = a;
  up = found && (found->ifa_flags & IFF_UP);
  freeifaddrs(all);
  return found ? NameLookup::kResolved : NameLookup::kTryAgain;
}

// Whether the interface named, or holding the IPv4 address, `interface` is up (false if none is).
bool interface_up(const std::string& interface) {
  bool up = false;
  std::string why;
  // Where the interfaces cannot be listed, say "up": the connect's error then speaks.
  return find_interface(interface, up, why) == NameLookup::kNotFound || up;
}

// Whether a datagram to `group` could leave by `interface` now: a throwaway UDP socket set as the
// output's is (set_multicast_interface) and connected to the group, which picks the route and the
// source address and sends nothing. Only "not yet" errors wait; any other is the start's to report.
NameLookup probe_send(const std::string& interface, const std::string& group, std::string& why) {
  sockaddr_in to4{};
  sockaddr_in6 to6{};
  const bool v4 = inet_pton(AF_INET, group.c_str(), &to4.sin_addr) == 1;
  if (!v4 && inet_pton(AF_INET6, group.c_str(), &to6.sin6_addr) != 1) return NameLookup::kResolved;
  to4.sin_family = AF_INET;
  to6.sin6_family = AF_INET6;
  to4.sin_port = to6.sin6_port = htons(9);
  const int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return NameLookup::kResolved;
  int err = 0;
  if (!set_multicast_interface(fd, !v4, interface))
    err = errno;
  else if (v4 ? connect(fd, reinterpret_cast<const sockaddr*>(&to4), sizeof to4)
              : connect(fd, reinterpret_cast<const sockaddr*>(&to6), sizeof to6))
    err = errno;
  close(fd);
  if (err == ENODEV) {  // gone again since it was found
    why = "no interface of that name here yet";
    return NameLookup::kTryAgain;
  }
  if (err != ENETUNREACH && err != ENETDOWN && err != EADDRNOTAVAIL && err != EHOSTUNREACH) return NameLookup::kResolved;
  why = !interface_up(interface)             ? "the interface is down"
        : !v4 && err == EADDRNOTAVAIL ? "no IPv6 address ready on it yet"
                                      : std::string("no route from it yet: ") + std::strerror(err);
  return NameLookup::kTryAgain;
}

}  // namespace

NameLookup look_up_listen_address(const std::string& host, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;  // as MetricsServer resolves it
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), "0", &hints, &found);
  if (rc != 0 || !found) {
    why = gai_strerror(rc);
    return rc == EAI_AGAIN ? NameLookup::kTryAgain : NameLookup::kNotFound;
  }
  const NameLookup result = try_bind(found->ai_addr, found->ai_addrlen, SOCK_STREAM, why);  // the one it binds
  freeaddrinfo(found);
  return result;
}

NameLookup look_up_interface(const std::string& interface, std::string& why, const std::string& group) {
  sockaddr_in v4{};
  if (inet_pton(AF_INET, interface.c_str(), &v4.sin_addr) == 1) {
    // IP_MULTICAST_IF wants a device that has the address (a bind test is not that: in a network
    // namespace whose loopback is down, any address binds).
    bool up = false;
    const NameLookup here = find_interface(interface, up, why);
    if (here != NameLookup::kResolved) {
      if (here == NameLookup::kTryAgain) why = "not an address of this machine yet";
      return here;
    }
  } else if (if_nametoindex(interface.c_str()) == 0) {
    why = "no interface of that name here yet";
    return NameLookup::kTryAgain;
  }
  return group.empty() ? NameLookup::kResolved : probe_send(interface, group, why);
}

}  // namespace vigil
