// vigil-listen --nats: the fleet's events from a NATS JetStream stream (docs/FLEET.md), each rig's
// in its order, with per-rig gaps and duplicates counted. A mode of vigil-listen, not a main().
#pragma once

#include <csignal>
#include <string>

#include "wire/fleet_reader.hpp"

namespace vigil {

struct FleetListenOptions {
  FleetReaderOptions reader;
  bool as_json = false, quiet = false;
  double seconds = 0;      // 0: until a signal
  uint64_t max_events = 0; // 0: no limit
  double hold_s = 5;       // how long an early message waits for the ones before it
  std::string web;         // HOST:PORT: the live view with a rig selector and a fleet table ("": none)
  double web_updates = 10; // a second
  size_t web_max_update_bytes = 90'000;
};

// Returns the exit status (0; 1 when the stream cannot be read). Stops when *stop is set.
int listen_fleet(const FleetListenOptions& options, volatile std::sig_atomic_t* stop);

}  // namespace vigil
