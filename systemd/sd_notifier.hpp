// SdNotifier: tells systemd (or whatever listens on $NOTIFY_SOCKET) how the service is doing:
// READY=1, STATUS=..., WATCHDOG=1, STOPPING=1. Uses libsystemd's sd_notify when built with it,
// otherwise sends the same datagram itself (the protocol of sd_notify(3): KEY=VALUE lines in one
// AF_UNIX datagram; a leading '@' names the abstract namespace). Thread: main thread only.
#pragma once

#include <cstdint>
#include <string>

namespace vigil {

class SdNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from the environment.
  SdNotifier();

  bool enabled() const noexcept { return !socket_path_.empty(); }
  // Microseconds systemd waits between pings before it restarts us (0: no watchdog). Honoured
  // only when WATCHDOG_PID is unset or names this process, as sd_watchdog_enabled(3) does.
  uint64_t watchdog_usec() const noexcept { return watchdog_usec_; }

  // Sends `state` (one or more KEY=VALUE lines). Returns false when disabled or the send failed
  // (the reason is in last_error()). Never blocks.
  bool notify(const std::string& state);
  const std::string& last_error() const noexcept { return last_error_; }

 private:
  std::string socket_path_;
  uint64_t watchdog_usec_ = 0;
  std::string last_error_;
};

}  // namespace vigil
