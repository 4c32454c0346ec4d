#include "pipeline/metrics_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace vigil {
namespace {

void send_all(int fd, const std::string& s) noexcept {
  size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return;
    at += size_t(n);
  }
}

}  // namespace

MetricsServer::MetricsServer(const Endpoint& listen_at) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string where = listen_at.host + ":" + std::to_string(listen_at.port);
  if (getaddrinfo(listen_at.host.c_str(), std::to_string(listen_at.port).c_str(), &hints, &res) != 0 || !res)
    throw std::runtime_error("metrics: cannot resolve " + where);
  fd_ = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool ok = fd_ >= 0 && bind(fd_, res->ai_addr, res->ai_addrlen) == 0 && ::listen(fd_, 16) == 0;
  const int err = errno;
  freeaddrinfo(res);
  if (!ok) {
    if (fd_ >= 0) close(fd_);
    throw std::runtime_error("metrics: cannot listen on " + where + ": " + std::strerror(err));
  }
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&a)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&a)->sin_port);
}

MetricsServer::~MetricsServer() {
  if (fd_ >= 0) close(fd_);
}

int MetricsServer::serve_pending(const std::function<std::string()>& body) noexcept {
  int answered = 0;
  for (;;) {
    const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return answered;  // none waiting (EAGAIN) or a transient error
    std::string req;
    char buf[1024];
    pollfd p{c, POLLIN, 0};
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 8192 && poll(&p, 1, 100) > 0) {
      const ssize_t n = recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.append(buf, size_t(n));
    }
    try {
      if (req.rfind("GET /metrics ", 0) == 0 || req.rfind("GET /metrics?", 0) == 0) {
        const std::string text = body();
        send_all(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " +
                        std::to_string(text.size()) + "\r\nConnection: close\r\n\r\n" + text);
      } else {
        send_all(c, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 23\r\n"
                    "Connection: close\r\n\r\nonly GET /metrics here\n");
      }
      ++answered;
    } catch (...) {  // out of memory while formatting: the scrape fails, the service does not
    }
    close(c);
  }
}

}  // namespace vigil
