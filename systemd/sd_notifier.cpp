#include "systemd/sd_notifier.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#if VIGIL_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace vigil {

SdNotifier::SdNotifier() {
  if (const char* s = std::getenv("NOTIFY_SOCKET")) socket_path_ = s;
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  if (usec) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(usec, &end, 10);
    const bool ours = !pid || std::strtoll(pid, nullptr, 10) == static_cast<long long>(getpid());
    if (end && *end == '\0' && v > 0 && ours) watchdog_usec_ = v;
  }
}

bool SdNotifier::notify(const std::string& state) {
  if (!enabled()) return false;
#if VIGIL_HAVE_SYSTEMD
  const int r = sd_notify(0, state.c_str());
  if (r > 0) return true;
  last_error_ = r < 0 ? std::strerror(-r) : "NOTIFY_SOCKET not usable";
  return false;
#else
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof addr.sun_path || (socket_path_[0] != '/' && socket_path_[0] != '@')) {
    last_error_ = "NOTIFY_SOCKET must be an absolute path or start with '@'";
    return false;
  }
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + socket_path_.size());
  if (socket_path_[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    last_error_ = std::strerror(errno);
    return false;
  }
  const ssize_t n = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), len);
  const int err = errno;
  close(fd);
  if (n != ssize_t(state.size())) {
    last_error_ = std::strerror(err);
    return false;
  }
  return true;
#endif
}

}  // namespace vigil
