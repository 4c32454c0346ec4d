#include "wire/name_wait.hpp"

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
  std::vector<Awaited> items;
  for (const std::string& host : distinct)
    items.push_back({host, [&options, host](std::string& why) { return options.look_up(host, why); }});
  return wait_for(items, options);
}

std::vector<std::string> wait_for(const std::vector<Awaited>& items, const NameWait& options) {
  std::vector<const Awaited*> waiting;
  for (const Awaited& item : items) waiting.push_back(&item);
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (;;) {
    std::vector<const Awaited*> again;
    for (const Awaited* item : waiting) {
      std::string why;
      if (item->look_up(why) == NameLookup::kTryAgain) {
        again.push_back(item);
        if (options.on_wait) options.on_wait(item->what, why, seconds());
      }
    }
    waiting = std::move(again);
    if (waiting.empty() || seconds() + options.retry_s > options.timeout_s) {
      std::vector<std::string> left;
      for (const Awaited* item : waiting) left.push_back(item->what);
      return left;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options.retry_s));
  }
}

}  // namespace vigil
