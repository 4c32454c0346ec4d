// FleetReader: reads a fleet stream (docs/FLEET.md) through a durable pull consumer, the way
// vigil-listen --nats does: each message's rig, run and seq headers and its text handed on, then
// acknowledged. The ordering per rig is FleetOrder's (fleet_order.hpp). Not real-time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vigil {

struct FleetReaderOptions {
  std::vector<std::string> servers;
  std::string stream = "VIGIL";
  std::string subject = "vigil.>";  // the subjects read (a rig's: vigil.<rig>.>)
  std::string durable = "vigil-listen";
  int64_t since_utc_ns = 0;  // > 0: from this time on (a new consumer only)
  std::string ca, creds, user, password;
};

class FleetReader {
 public:
  // Connects and binds the consumer (created when absent); throws std::runtime_error saying what
  // failed (the server, the stream, the consumer).
  explicit FleetReader(const FleetReaderOptions& options);
  ~FleetReader();

  struct Message {
    std::string_view rig, run, seq, subject, text;
  };
  // Up to `batch` messages, waiting up to timeout_ms for the first; each handed to on_message,
  // then acknowledged. Returns how many came (0 on a timeout or while reconnecting).
  size_t fetch(int batch, int timeout_ms, const std::function<void(const Message&)>& on_message);
  // "connected", "reconnecting", ... and the last error of a fetch ("" when none).
  std::string state() const;
  const std::string& last_error() const noexcept { return last_error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string last_error_;
};

// The central stream of a fleet (docs/FLEET.md): file storage, `replicas` copies, sourcing the
// stream `box_stream` of each rig box's JetStream domain (resuming by sequence whenever the
// link is up); and beside it the key-value bucket `bucket` (rig presence: <rig>.start,
// <rig>.status), sourcing each box's bucket the same way. Created, or their sources and replicas
// updated when they exist. Returns what it did ("created ...", "updated ..."); throws
// std::runtime_error saying what failed.
std::string create_fleet_stream(const FleetReaderOptions& connection, const std::string& name,
                                const std::vector<std::string>& domains, const std::string& box_stream, int replicas,
                                const std::string& bucket = "vigil_rigs");

}  // namespace vigil
