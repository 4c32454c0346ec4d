#include "pipeline/name_wait.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <set>
#include <thread>

namespace vigil {

NameLookup look_up_name(const std::string& host, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc == 0) {
    freeaddrinfo(found);
    return NameLookup::kResolved;
  }
  why = gai_strerror(rc);
  return rc == EAI_AGAIN ? NameLookup::kTryAgain : NameLookup::kNotFound;
}

std::vector<std::string> wait_for_names(const std::vector<std::string>& hosts, const NameWait& options) {
  const std::set<std::string> distinct(hosts.begin(), hosts.end());
  std::vector<std::string> waiting(distinct.begin(), distinct.end());
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<std::string> again;
    for (const std::string& host : waiting) {
      std::string why;
      if (options.look_up(host, why) == NameLookup::kTryAgain) {
        again.push_back(host);
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (options.on_wait) options.on_wait(host, why, waited);
      }
    }
    waiting = std::move(again);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waiting.empty() || waited + options.retry_s > options.timeout_s) return waiting;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.retry_s));
  }
}

}  // namespace vigil
