// WebServer through Beast's own client: the page over HTTP, WebSocket framing of updates, foreign
// origins refused, a client that stops reading skipped and then dropped without holding others up.
#include "web/web_server.hpp"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "web/page_assets.hpp"

namespace vigil::web {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

http::response<http::string_body> get(uint16_t port, http::verb verb, const std::string& target) {
  net::io_context ioc;
  beast::tcp_stream s(ioc);
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(verb, target, 11);
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  req.keep_alive(false);
  req.prepare_payload();
  http::write(s, req);
  beast::flat_buffer b;
  http::response<http::string_body> res;
  http::read(s, b, res);
  return res;
}

struct WsClient {
  net::io_context ioc;
  websocket::stream<tcp::socket> ws{ioc};
  explicit WsClient(uint16_t port, const std::string& origin = "") {
    ws.next_layer().connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    if (!origin.empty())
      ws.set_option(websocket::stream_base::decorator(
          [origin](websocket::request_type& r) { r.set(http::field::origin, origin); }));
    ws.handshake("127.0.0.1:" + std::to_string(port), "/ws");
  }
  std::string read() {
    beast::flat_buffer b;
    ws.read(b);
    EXPECT_TRUE(ws.got_text());
    return beast::buffers_to_string(b.data());
  }
};

bool wait_for(const std::function<bool()>& cond, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(WebServer, ServesTheEmbeddedPageAndNothingElse) {
  WebServer server("127.0.0.1", 0, page_assets());
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/");
  const auto page = get(server.port(), http::verb::get, "/");
  EXPECT_EQ(page.result(), http::status::ok);
  EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_NE(page.body().find("<script src=\"/uPlot.iife.min.js\"></script>"), std::string::npos);
  EXPECT_NE(page.body().find("<script src=\"/app.js\"></script>"), std::string::npos);
  // The page refers to nothing outside this server; the policy forbids it anyway.
  EXPECT_EQ(page.body().find("http://"), std::string::npos);
  EXPECT_EQ(page.body().find("https://"), std::string::npos);
  EXPECT_NE(std::string(page["Content-Security-Policy"]).find("default-src 'self'"), std::string::npos);
  const auto uplot = get(server.port(), http::verb::get, "/uPlot.iife.min.js");
  EXPECT_EQ(uplot.result(), http::status::ok);
  EXPECT_GT(uplot.body().size(), 20000u);
  EXPECT_NE(uplot.body().find("uPlot"), std::string::npos);
  EXPECT_EQ(get(server.port(), http::verb::get, "/app.js?v=1").result(), http::status::ok);
  EXPECT_EQ(get(server.port(), http::verb::get, "/../etc/passwd").result(), http::status::not_found);
  EXPECT_EQ(get(server.port(), http::verb::post, "/").result(), http::status::method_not_allowed);
  EXPECT_EQ(server.counters().http_requests.load(), 5u);
}

TEST(WebServer, EveryClientGetsEachUpdateAsOneTextMessage) {
  WebServer server("127.0.0.1", 0, page_assets());
  WsClient a(server.port()), b(server.port(), "http://127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(wait_for([&] { return server.counters().clients.load() == 2; }, 5));
  const std::string big(300'000, 'x');  // several TCP segments, one message
  for (const std::string& m : {std::string("{\"update\":0}"), big, std::string("\u00b7 utf-8")}) {
    server.publish(std::make_shared<const std::string>(m));
    EXPECT_EQ(a.read(), m);
    EXPECT_EQ(b.read(), m);
  }
  EXPECT_EQ(server.counters().connections.load(), 2u);
  EXPECT_EQ(server.counters().updates_published.load(), 3u);
  ASSERT_TRUE(wait_for([&] { return server.counters().updates_sent.load() == 6; }, 5));
  a.ws.close(websocket::close_code::normal);
  ASSERT_TRUE(wait_for([&] { return server.counters().clients.load() == 1; }, 5));
}

TEST(WebServer, RefusesAPageFromAnotherOrigin) {
  WebServer server("127.0.0.1", 0, page_assets());
  EXPECT_THROW(WsClient(server.port(), "http://evil.example"), boost::system::system_error);
  EXPECT_EQ(server.counters().rejected.load(), 1u);
  EXPECT_EQ(server.counters().clients.load(), 0u);
}

TEST(WebServer, AClientThatStopsReadingIsSkippedThenDroppedAndHoldsNoOneUp) {
  // Idle timeout 2 s: the reader must answer the server's pings in that time even under TSan on
  // two busy cores (with 1 s, and the reader starting only after the publishes, CI's TSan run once
  // saw the reader closed too).
  WebServer server("127.0.0.1", 0, page_assets(), /*idle_timeout_s=*/2.0);
  WsClient stuck(server.port()), reader(server.port());
  ASSERT_TRUE(wait_for([&] { return server.counters().clients.load() == 2; }, 5));
  // The reader keeps reading (and so answers pings) on its own thread from the start until "after"
  // comes; a connection closed under it is the test's failure, not an exception out of the thread.
  std::atomic<bool> got_last{false};
  std::string final_message, reader_error;
  std::thread reading([&] {
    try {
      for (;;) {
        const std::string m = reader.read();
        if (m.rfind("199:", 0) == 0) got_last = true;  // the newest is never skipped
        if (m == "after") {
          final_message = m;
          return;
        }
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
    }
  });
  // 200 updates of 256 KB: far more than the stuck client's socket buffers hold.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    std::string m = std::to_string(i) + ":";
    m.resize(256 * 1024, 'x');
    server.publish(std::make_shared<const std::string>(std::move(m)));
  }
  const double publish_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(wait_for([&] { return got_last.load(); }, 10));
  EXPECT_GT(server.counters().updates_skipped.load(), 100u);  // mostly the stuck client's
  // The stuck client answers no ping: the idle timeout closes it; the reader stays.
  EXPECT_TRUE(wait_for([&] { return server.counters().clients.load() == 1; }, 10))
      << server.counters().clients.load() << " clients";
  server.publish(std::make_shared<const std::string>("after"));
  reading.join();
  EXPECT_EQ(reader_error, "") << "the reader's connection was closed";
  EXPECT_EQ(final_message, "after");
  std::printf("200 publishes of 256 KB took %.1f ms; %llu skipped\n", publish_s * 1e3,
              (unsigned long long)server.counters().updates_skipped.load());
}

TEST(WebServer, ParsesListenAddresses) {
  std::string host, why;
  uint16_t port = 1;
  ASSERT_TRUE(parse_listen_address("127.0.0.1:8080", host, port, why)) << why;
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(parse_listen_address("[::1]:0", host, port, why)) << why;
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  EXPECT_FALSE(parse_listen_address("8080", host, port, why));
  EXPECT_NE(why.find("HOST:PORT"), std::string::npos);
  EXPECT_FALSE(parse_listen_address("localhost:8080", host, port, why));
  EXPECT_NE(why.find("IP address"), std::string::npos);
  EXPECT_FALSE(parse_listen_address("127.0.0.1:70000", host, port, why));
  EXPECT_FALSE(parse_listen_address("127.0.0.1:", host, port, why));
  EXPECT_THROW(WebServer("10.255.255.1", 0, {}), std::runtime_error);  // not this machine's
}

}  // namespace
}  // namespace vigil::web
