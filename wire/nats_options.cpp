#include "wire/nats_options.hpp"

namespace vigil {

natsStatus make_nats_options(const NatsAccess& a, natsOptions** out) {
  natsStatus s = natsOptions_Create(out);
  natsOptions* opts = *out;
  std::vector<const char*> servers;
  for (const std::string& u : a.servers) servers.push_back(u.c_str());
  if (s == NATS_OK) s = natsOptions_SetServers(opts, servers.data(), int(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts, a.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, a.timeout_ms);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);  // once connected, never give up
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  if (s == NATS_OK && !a.ca.empty()) s = natsOptions_LoadCATrustedCertificates(opts, a.ca.c_str());
  if (s == NATS_OK && !a.ca.empty()) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !a.cert.empty()) s = natsOptions_LoadCertificatesChain(opts, a.cert.c_str(), a.key.c_str());
  if (s == NATS_OK && !a.creds.empty()) s = natsOptions_SetUserCredentialsFromFiles(opts, a.creds.c_str(), nullptr);
  if (s == NATS_OK && !a.user.empty()) s = natsOptions_SetUserInfo(opts, a.user.c_str(), a.password.c_str());
  return s;
}

}  // namespace vigil
