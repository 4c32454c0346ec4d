// A TCP relay on loopback that a test can cut: a link between a leaf node and its cluster. Each
// connection it accepts goes to the first of its targets that answers; cut() closes every
// connection and refuses new ones until restore().
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace vigil::test {

class TcpRelay {
 public:
  explicit TcpRelay(std::vector<uint16_t> targets) : targets_(std::move(targets)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in a = loopback(0);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(listen_fd_, 16);
    thread_ = std::thread([this] { run(); });
  }
  ~TcpRelay() {
    stop_ = true;
    thread_.join();
    close_all();
    ::close(listen_fd_);
  }
  uint16_t port() const noexcept { return port_; }
  void cut() {
    cut_ = true;
    const std::lock_guard<std::mutex> lock(mutex_);
    close_all();
  }
  void restore() { cut_ = false; }

 private:
  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }
  void close_all() {
    for (auto& [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    pairs_.clear();
  }
  void run() {
    std::vector<char> buf(65536);
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [a, b] : pairs_) {
          fds.push_back({a, POLLIN, 0});
          fds.push_back({b, POLLIN, 0});
        }
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      const std::lock_guard<std::mutex> lock(mutex_);
      if (fds[0].revents & POLLIN) {
        const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0 && cut_) {
          ::close(c);
        } else if (c >= 0) {
          int t = -1;
          for (const uint16_t port : targets_) {
            t = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            const sockaddr_in a = loopback(port);
            if (::connect(t, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) break;
            ::close(t);
            t = -1;
          }
          if (t < 0) ::close(c);
          else pairs_.emplace_back(c, t);
        }
      }
      // Bytes across; a side that closed (or failed) closes the pair.
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const size_t p = (i - 1) / 2;
        if (p >= pairs_.size()) break;  // cut meanwhile
        const int from = fds[i].fd, to = from == pairs_[p].first ? pairs_[p].second : pairs_[p].first;
        const ssize_t n = ::recv(from, buf.data(), buf.size(), MSG_DONTWAIT);
        bool ok = n > 0;
        for (ssize_t sent = 0; ok && sent < n;) {
          const ssize_t w = ::send(to, buf.data() + sent, size_t(n - sent), MSG_NOSIGNAL);
          ok = w > 0;
          sent += ok ? w : 0;
        }
        if (!ok && !(n < 0 && errno == EAGAIN)) {
          ::close(pairs_[p].first);
          ::close(pairs_[p].second);
          pairs_[p] = {-1, -1};
        }
      }
      std::erase_if(pairs_, [](const auto& pr) { return pr.first < 0; });
    }
  }

  std::vector<uint16_t> targets_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false}, cut_{false};
  std::mutex mutex_;
  std::vector<std::pair<int, int>> pairs_;
  std::thread thread_;
};

}  // namespace vigil::test
