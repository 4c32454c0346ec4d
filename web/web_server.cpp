#include "web/web_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "wire/endpoint.hpp"
#include "core/thread_name.hpp"

namespace vigil::web {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {
class WsSession;
}

struct WebServer::Impl {
  Impl(WebCounters& c, std::vector<Asset> a, double idle) : counters(c), assets(std::move(a)), idle_timeout_s(idle) {}
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  WebCounters& counters;
  std::vector<Asset> assets;
  double idle_timeout_s;
  std::set<std::shared_ptr<WsSession>> sessions;  // the server thread's only
  std::thread thread;

  void accept();
  const Asset* find(std::string_view path) const {
    for (const Asset& a : assets)
      if (a.path == path) return &a;
    return nullptr;
  }
};

namespace {

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket&& socket, WebServer::Impl& server) : ws_(std::move(socket)), server_(server) {}

  void run(http::request<http::string_body> request) {
    websocket::stream_base::timeout t{};
    t.handshake_timeout = std::chrono::seconds(10);
    t.idle_timeout = std::chrono::milliseconds(int64_t(server_.idle_timeout_s * 1000));
    t.keep_alive_pings = true;  // a browser answers pings; one that stops reading times out
    ws_.set_option(t);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& r) { r.set(http::field::server, "vigil-listen"); }));
    ws_.read_message_max(4096);  // the page sends nothing that matters
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
  }

  void send(const std::shared_ptr<const std::string>& text) {
    if (!open_) return;
    if (writing_) {
      if (pending_) server_.counters.updates_skipped.fetch_add(1, std::memory_order_relaxed);
      pending_ = text;
      return;
    }
    write(text);
  }

  void abort() {
    beast::error_code ec;
    beast::get_lowest_layer(ws_).socket().close(ec);
    close();
  }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    open_ = true;
    server_.sessions.insert(shared_from_this());
    server_.counters.clients.fetch_add(1, std::memory_order_relaxed);
    server_.counters.connections.fetch_add(1, std::memory_order_relaxed);
    read();
  }

  void read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) {
        self->close();
        return;
      }
      self->in_.consume(n);
      self->read();
    });
  }

  void write(std::shared_ptr<const std::string> text) {
    writing_ = std::move(text);
    ws_.text(true);
    ws_.async_write(net::buffer(*writing_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->on_write(ec, n);
    });
  }

  void on_write(beast::error_code ec, size_t n) {
    writing_.reset();
    if (ec) {
      close();
      return;
    }
    server_.counters.updates_sent.fetch_add(1, std::memory_order_relaxed);
    server_.counters.bytes_sent.fetch_add(n, std::memory_order_relaxed);
    if (pending_ && open_) {
      std::shared_ptr<const std::string> next = std::move(pending_);
      pending_.reset();
      write(std::move(next));
    }
  }

  void close() {
    if (!open_) return;
    open_ = false;
    pending_.reset();
    server_.counters.clients.fetch_sub(1, std::memory_order_relaxed);
    server_.sessions.erase(shared_from_this());
  }

  websocket::stream<beast::tcp_stream> ws_;
  WebServer::Impl& server_;
  beast::flat_buffer in_;
  std::shared_ptr<const std::string> writing_, pending_;
  bool open_ = false;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket&& socket, WebServer::Impl& server) : stream_(std::move(socket)), server_(server) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(4096);
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->on_read(ec);
    });
  }

 private:
  // A browser page from elsewhere must not read the stream: an Origin, when given, must be this
  // server's own.
  static bool same_origin(const http::request<http::string_body>& req) {
    const auto origin = req.find(http::field::origin);
    if (origin == req.end()) return true;
    const auto host = req.find(http::field::host);
    return host != req.end() && origin->value() == "http://" + std::string(host->value());
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream) {
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      return;
    }
    if (ec) return;
    server_.counters.http_requests.fetch_add(1, std::memory_order_relaxed);
    http::request<http::string_body> req = parser_->release();
    if (websocket::is_upgrade(req)) {
      if (req.target() == "/ws" && same_origin(req)) {
        stream_.expires_never();
        std::make_shared<WsSession>(stream_.release_socket(), server_)->run(std::move(req));
        return;
      }
      server_.counters.rejected.fetch_add(1, std::memory_order_relaxed);
      respond(req, http::status::forbidden, "text/plain", "forbidden\n");
      return;
    }
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      respond(req, http::status::method_not_allowed, "text/plain", "only GET\n");
      return;
    }
    std::string_view path(req.target().data(), req.target().size());
    if (const size_t q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
    if (const Asset* a = server_.find(path))
      respond(req, http::status::ok, a->content_type, a->body);
    else
      respond(req, http::status::not_found, "text/plain", "not found\n");
  }

  void respond(const http::request<http::string_body>& req, http::status status, std::string_view type,
               std::string_view body) {
    auto res = std::make_shared<http::response<http::string_body>>(status, req.version());
    res->set(http::field::server, "vigil-listen");
    res->set(http::field::content_type, beast::string_view(type.data(), type.size()));
    res->set(http::field::cache_control, "no-store");
    // Everything the page needs comes from here: no external URL can load.
    res->set("Content-Security-Policy",
             "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'");
    res->set("X-Content-Type-Options", "nosniff");
    res->keep_alive(req.keep_alive());
    if (req.method() != http::verb::head) res->body() = std::string(body);
    res->prepare_payload();
    if (req.method() == http::verb::head) res->content_length(body.size());
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec) return;
      if (res->need_eof()) {
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        return;
      }
      self->read();
    });
  }

  beast::tcp_stream stream_;
  WebServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

}  // namespace

void WebServer::Impl::accept() {
  acceptor.async_accept(ioc, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;  // closed: the server stops
    if (!ec) std::make_shared<HttpSession>(std::move(socket), *this)->read();
    accept();
  });
}

WebServer::WebServer(const std::string& host, uint16_t port, std::vector<Asset> assets, double idle_timeout_s)
    : impl_(std::make_unique<Impl>(counters_, std::move(assets), idle_timeout_s)), host_(host) {
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) throw std::runtime_error("'" + host + "' is not an IP address");
  const tcp::endpoint endpoint(address, port);
  Impl& s = *impl_;
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
  port_ = s.acceptor.local_endpoint().port();
  s.accept();
  s.thread = std::thread([&s] {
    name_this_thread("vigil-web");
    s.ioc.run();
  });
}

WebServer::~WebServer() {
  Impl& s = *impl_;
  // On the server thread: stop accepting, close every client, and return from run(); handlers
  // left (an idle HTTP keep-alive read) are destroyed with the io_context.
  net::post(s.ioc, [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
    const auto sessions = s.sessions;  // abort() erases from the set
    for (const auto& w : sessions) w->abort();
    s.ioc.stop();
  });
  if (s.thread.joinable()) s.thread.join();
}

std::string WebServer::url() const {
  const bool v6 = host_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_) + "/";
}

void WebServer::publish(std::shared_ptr<const std::string> text) {
  counters_.updates_published.fetch_add(1, std::memory_order_relaxed);
  net::post(impl_->ioc, [this, text = std::move(text)] {
    const auto sessions = impl_->sessions;  // send() may close a session
    for (const auto& w : sessions) w->send(text);
  });
}

bool parse_listen_address(const std::string& text, std::string& host, uint16_t& port, std::string& why) {
  Endpoint ep;
  if (!parse_endpoint(text, ep, why, /*allow_port_zero=*/true)) return false;
  beast::error_code ec;
  net::ip::make_address(ep.host, ec);
  if (ec) {
    why = "the host in '" + text + "' must be an IP address (127.0.0.1, ::1, or this machine's own)";
    return false;
  }
  host = ep.host;
  port = ep.port;
  return true;
}

}  // namespace vigil::web
