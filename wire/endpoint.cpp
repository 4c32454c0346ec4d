#include "wire/endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

namespace vigil {

std::string format_endpoint(const Endpoint& ep) {
  return (ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host) + ":" + std::to_string(ep.port);
}

bool is_multicast_address(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return IN_MULTICAST(ntohl(v4.s_addr));
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_MULTICAST(&v6);
}

bool parse_endpoint(const std::string& text, Endpoint& out, std::string& why, bool allow_port_zero) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      why = "expected [IPv6]:PORT, got '" + text + "'";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      why = "expected HOST:PORT (IPv6 as [ADDR]:PORT), got '" + text + "'";
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    why = "missing host in '" + text + "'";
    return false;
  }
  const unsigned long lowest = allow_port_zero ? 0 : 1;
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
      std::stoul(port) < lowest || std::stoul(port) > 65535) {
    why = "port must be " + std::to_string(lowest) + "..65535, got '" + port + "'";
    return false;
  }
  out.host = host;
  out.port = uint16_t(std::stoul(port));
  return true;
}

}  // namespace vigil
