// Whether what a config asks of this machine's own network is there yet: the address metrics.listen
// binds to, the interface a multicast output sends from. On a machine that has just booted, DHCP
// or a slow link may not have given them yet; vigild waits for them (wire/name_wait.hpp) as it
// waits for names, instead of failing a start that systemd's start limit could make final.
#pragma once

#include <string>

#include "wire/name_wait.hpp"

namespace vigil {

// metrics.listen's host (an address or a name, "0.0.0.0" and "::" for every address): kResolved
// when a TCP socket can be bound to it here now; kTryAgain when its name has no answer yet or the
// address is not on any interface yet (EADDRNOTAVAIL); kNotFound for any other failure.
NameLookup look_up_listen_address(const std::string& host, std::string& why);

// A multicast output's interface (its IPv4 address, or its name): kResolved when the address is
// on an interface here now or an interface has that name; kTryAgain otherwise, since an interface
// can appear at any time (a USB adapter, a VLAN made by the network service); kNotFound only where
// the interfaces cannot be listed at all. With `group` (the output's multicast address): also
// kTryAgain while a datagram to it could not leave by that interface yet: the interface is down,
// or up with no route or no IPv6 address ready (the link-local one is tentative for a second or
// two after the link comes up) — a socket set as the output's is connected to the group to know.
NameLookup look_up_interface(const std::string& interface, std::string& why, const std::string& group = "");

}  // namespace vigil
