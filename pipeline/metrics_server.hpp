// MetricsServer: a minimal HTTP/1.1 endpoint for Prometheus scrapes (GET /metrics), served from
// vigild's main loop between its ticks: no thread of its own, never on a real-time path. Only
// constructed when the config has `metrics:` (vigild opens no listening socket otherwise).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "config/settings.hpp"

namespace vigil {

class MetricsServer {
 public:
  // Binds and listens (throws std::runtime_error naming the address on failure).
  explicit MetricsServer(const Endpoint& listen);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Answers every connection waiting now; `body` makes the exposition text. Each client gets at
  // most ~100 ms to send its request. Returns the number of requests answered.
  int serve_pending(const std::function<std::string()>& body) noexcept;
  uint16_t port() const noexcept { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace vigil
