// Where datagrams go or come from: a host (address or name) and a port, as the config and the
// command lines write them ("HOST:PORT", "[IPv6]:PORT"), and a multicast output's settings.
#pragma once

#include <cstdint>
#include <string>

namespace vigil {

struct Endpoint {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// For a multicast destination (224.0.0.0/4, ff00::/8): how far its datagrams go and where from.
struct MulticastSettings {
  std::string interface;  // "" (the route's), an interface's IPv4 address, or its name ("eth1")
  uint32_t ttl = 1;       // hops: 1 = this network only
  bool loop = true;       // receivers on this host get them too
  bool operator==(const MulticastSettings&) const = default;
};

// Splits "host:port" or "[v6]:port". Returns false with a reason when malformed. Port 0 (a
// listener's "any free port") only when allowed.
bool parse_endpoint(const std::string& text, Endpoint& out, std::string& why, bool allow_port_zero = false);

// "HOST:PORT", an IPv6 address in brackets ("[::1]:4991"): what parse_endpoint reads.
std::string format_endpoint(const Endpoint& ep);

// Whether `host` is a multicast address (224.0.0.0/4, ff00::/8); a name is not.
bool is_multicast_address(const std::string& host);

}  // namespace vigil
