// A real nats-server for the fleet tests: JetStream on, a free port on loopback, its store in a
// folder the test owns (so that a restart finds what it had), stderr to a log. Tests skip with the
// reason where nats-server is not installed (CI installs it: scripts/deps-debian.txt).
#pragma once

#include <arpa/inet.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "ports.hpp"
#include "process.hpp"

namespace vigil::test {

// nats-server's path, or "" when it is not on PATH.
inline std::string nats_server_path() {
  const char* path = std::getenv("PATH");
  for (std::string dirs = path ? path : "/usr/bin:/usr/sbin"; !dirs.empty();) {
    const size_t colon = dirs.find(':');
    const std::string candidate = dirs.substr(0, colon) + "/nats-server";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs = colon == std::string::npos ? "" : dirs.substr(colon + 1);
  }
  return "";
}

// Whether something accepts TCP connections on 127.0.0.1:port.
inline bool tcp_port_open(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool open = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return open;
}

// The value of `key` in the key-value bucket on the server at `url`, waiting up to wait_s for it
// to be there; "" when it is not.
inline std::string bucket_value(const std::string& url, const std::string& key, double wait_s = 0,
                                const std::string& bucket = "vigil_rigs") {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  kvStore* kv = nullptr;
  kvEntry* e = nullptr;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  if (natsConnection_ConnectTo(&nc, url.c_str()) == NATS_OK && natsConnection_JetStream(&js, nc, nullptr) == NATS_OK)
    for (;;) {
      if (!kv) js_KeyValue(&kv, js, bucket.c_str());
      if (kv) kvStore_Get(&e, kv, key.c_str());
      if (e || std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  std::string value;
  if (e) value.assign(static_cast<const char*>(kvEntry_Value(e)), size_t(kvEntry_ValueLen(e)));
  kvEntry_Destroy(e);
  kvStore_Destroy(kv);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return value;
}

class NatsServer {
 public:
  // dir: the store and config go there. extra: more config text (authorization, tls, cluster,
  // leafnodes, ...). domain: its JetStream domain ("": none).
  NatsServer(const std::filesystem::path& dir, std::string extra = "", uint16_t port = 0, std::string name = "",
             std::string domain = "")
      : dir_(dir), extra_(std::move(extra)), port_(port ? port : free_tcp_port()), name_(std::move(name)),
        domain_(std::move(domain)) {}
  ~NatsServer() { stop(); }

  uint16_t port() const noexcept { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

  // Starts it and waits (up to 10 s) until it takes connections; false if it did not.
  bool start() {
    std::filesystem::create_directories(dir_ / "store");
    const std::string conf = (dir_ / "nats.conf").string();
    std::ofstream(conf) << (name_.empty() ? "" : "server_name: " + name_ + "\n") << "listen: 127.0.0.1:" << port_
                        << "\njetstream { store_dir: \"" << (dir_ / "store").string() << "\""
                        << (domain_.empty() ? "" : ", domain: " + domain_) << " }\n" << extra_ << "\n";
    ++starts_;
    server_ = std::make_unique<Process>(std::vector<std::string>{
        "/bin/sh", "-c", "exec " + nats_server_path() + " -c " + conf + " 2>>" + (dir_ / "nats.log").string()});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      if (tcp_port_open(port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  // SIGSTOP: the server hangs (a frozen machine): it takes nothing in and answers nothing.
  void freeze() {
    if (server_) server_->signal(SIGSTOP);
  }
  // SIGKILL: the server dies as a power cut would leave its process (its files stay).
  void kill() {
    if (server_) {
      server_->signal(SIGKILL);
      server_->wait(std::chrono::seconds(10));
      server_.reset();
    }
  }
  void stop() {
    if (server_) {
      server_->signal(SIGTERM);
      if (server_->wait(std::chrono::seconds(10)) < 0) server_->signal(SIGKILL);
      server_.reset();
    }
  }
  bool running() const noexcept { return server_ != nullptr; }
  const std::string& name() const noexcept { return name_; }
  std::string log() const { return read_text((dir_ / "nats.log").string()); }

 private:
  std::filesystem::path dir_;
  std::string extra_;
  uint16_t port_;
  std::string name_, domain_;
  int starts_ = 0;
  std::unique_ptr<Process> server_;
};

}  // namespace vigil::test
