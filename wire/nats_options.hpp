// The NATS client options the fleet's two ends share (the output in vigild, the reader in
// vigil-listen): the servers, reconnecting for ever every 250 ms once connected, and TLS and
// credentials where given. The caller adds its own callbacks, connects, and destroys the options.
#pragma once

#include <nats/nats.h>

#include <string>
#include <vector>

namespace vigil {

struct NatsAccess {
  std::vector<std::string> servers;
  std::string name;        // the client's name on the server
  int64_t timeout_ms = 2000;  // to connect
  std::string ca, cert, key, creds, user, password;  // "": not used
};

// *out: the options (destroyed by the caller, also on failure); the first failure's status.
natsStatus make_nats_options(const NatsAccess& access, natsOptions** out);

}  // namespace vigil
