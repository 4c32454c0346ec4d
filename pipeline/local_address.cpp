#include "pipeline/local_address.hpp"

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

NameLookup look_up_interface(const std::string& interface, std::string& why) {
  sockaddr_in v4{};
  if (inet_pton(AF_INET, interface.c_str(), &v4.sin_addr) == 1) {
    // IP_MULTICAST_IF wants a device that has the address (a bind test is not that: in a network
    // namespace whose loopback is down, any address binds).
    ifaddrs* all = nullptr;
    if (getifaddrs(&all) != 0) {
      why = std::strerror(errno);
      return NameLookup::kNotFound;
    }
    bool here = false;
    for (const ifaddrs* a = all; a && !here; a = a->ifa_next)
      here = a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
             reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == v4.sin_addr.s_addr;
    freeifaddrs(all);
    if (here) return NameLookup::kResolved;
    why = "not an address of this machine yet";
    return NameLookup::kTryAgain;
  }
  if (if_nametoindex(interface.c_str()) != 0) return NameLookup::kResolved;
  why = "no interface of that name here yet";
  return NameLookup::kTryAgain;
}

}  // namespace vigil
