// Waiting for destination names at start: on a machine that has just booted, the network or the
// DNS server may not answer yet, and a name in `destination:` then fails with "try again" where
// an address would not. vigild waits (up to a limit, saying so) for such names instead of exiting,
// which under systemd's start limit could leave a rig unmonitored until someone restarts it. A
// name the resolver says does not exist fails at once, as before. wait_for() waits the same way for
// anything else the network gives late (wire/local_address.hpp). Thread: the caller's.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace vigil {

enum class NameLookup { kResolved, kNotFound, kTryAgain };

// getaddrinfo(3) for UDP: kTryAgain for EAI_AGAIN (no answer yet), kNotFound for any other
// failure (why: the resolver's text).
NameLookup look_up_name(const std::string& host, std::string& why);

struct NameWait {
  double timeout_s = 120;  // then give up: the output's own error says which name failed
  double retry_s = 1;
  // How each name is looked up (look_up_name; tests give their own).
  std::function<NameLookup(const std::string&, std::string&)> look_up = look_up_name;
  // Told each time a name is still waited for: the name, the resolver's text, seconds waited.
  std::function<void(const std::string&, const std::string&, double)> on_wait;
};

// Looks up every distinct name in `hosts` until none answers "try again" or the timeout passes;
// returns the names still answering "try again" (empty: every name resolved or is known bad).
std::vector<std::string> wait_for_names(const std::vector<std::string>& hosts, const NameWait& options);

// Anything else the network gives after boot (wire/local_address.hpp): what it is, for the
// log ("the name rig-7.plant to resolve"), and how to ask whether it is there yet.
struct Awaited {
  std::string what;
  std::function<NameLookup(std::string& why)> look_up;
};

// Asks each item until none answers "try again" or the timeout passes, telling options.on_wait
// each item's `what` while it waits (options.look_up is not used); returns the `what` of the
// items still answering "try again".
std::vector<std::string> wait_for(const std::vector<Awaited>& items, const NameWait& options);

}  // namespace vigil
