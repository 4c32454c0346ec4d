// A UDP socket to receive on (vigil-listen's ports, the VITA 49 source): bound to an address or a
// multicast group joined on an interface, with a large receive buffer and the kernel's drop count.
#pragma once

#include <cstdint>
#include <string>

namespace vigil {

// A UDP socket bound to bind_addr:port: an IPv4 or IPv6 address, or a name (its IPv4 address if it
// has one). "::" takes IPv4 senders too (dual stack). A multicast group is joined (on `interface`:
// "" the route's, an IPv4 address or a name), with the port shared, so that several receivers on
// this host each get every datagram. Non-blocking, close-on-exec; SO_RXQ_OVFL on. Returns -2 when
// bind_addr is no address or the interface is given for a unicast address (a usage error), -1
// when the socket cannot be had; why says which.
int open_udp_receiver(const std::string& bind_addr, uint16_t port, int buffer_bytes, const std::string& interface,
                      std::string& why);

}  // namespace vigil
