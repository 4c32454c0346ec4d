// WebServer: vigil-listen's web view server (Boost.Beast). Serves the embedded page over HTTP and
// pushes each update to every connected WebSocket client (path /ws). Runs on its own thread;
// publish() only posts to it, so the receive loop never waits for a browser. A client still busy
// with one update keeps just the newest next one: the ones it skipped are counted, memory stays
// two updates per client, and a client that stops reading is closed by the idle timeout.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::web {

struct Asset {
  std::string_view path;          // "/", "/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

struct WebCounters {
  std::atomic<uint64_t> clients{0};           // WebSocket clients connected now
  std::atomic<uint64_t> connections{0};       // WebSocket clients ever accepted
  std::atomic<uint64_t> rejected{0};          // upgrades refused (foreign Origin, bad path)
  std::atomic<uint64_t> http_requests{0};
  std::atomic<uint64_t> updates_published{0};
  std::atomic<uint64_t> updates_sent{0};      // summed over clients
  std::atomic<uint64_t> updates_skipped{0};   // a client was still busy: it got a newer one instead
  std::atomic<uint64_t> bytes_sent{0};        // WebSocket payload bytes, summed over clients
};

class WebServer {
 public:
  // Binds host:port (an IP literal; port 0 picks a free one). Throws std::runtime_error saying why.
  WebServer(const std::string& host, uint16_t port, std::vector<Asset> assets, double idle_timeout_s = 30);
  ~WebServer();  // closes every connection and joins the thread
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  uint16_t port() const noexcept { return port_; }
  std::string url() const;
  // Any thread, never blocks: sends `text` to every client as one WebSocket text message.
  void publish(std::shared_ptr<const std::string> text);
  const WebCounters& counters() const noexcept { return counters_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::string host_;
  WebCounters counters_;
};

// Splits "HOST:PORT" ("127.0.0.1:8080", "[::1]:8080"). False with why for anything else.
bool parse_listen_address(const std::string& text, std::string& host, uint16_t& port, std::string& why);

}  // namespace vigil::web
