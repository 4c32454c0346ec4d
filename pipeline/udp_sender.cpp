#include "pipeline/udp_sender.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <sys/socket.h>
#include <stdexcept>

namespace vigil {

namespace asio = boost::asio;
using asio::ip::udp;

UdpSender::UdpSender(asio::io_context& io, const Endpoint& destination) : socket_(io) {
  boost::system::error_code ec;
  udp::resolver resolver(io);
  const auto results = resolver.resolve(udp::v4(), destination.host, std::to_string(destination.port), ec);
  if (ec || results.empty()) {
    const auto v6 = resolver.resolve(udp::v6(), destination.host, std::to_string(destination.port), ec);
    if (ec || v6.empty())
      throw std::runtime_error("output " + destination.host + ":" + std::to_string(destination.port) +
                               ": cannot resolve host: " + ec.message());
    endpoint_ = *v6.begin();
  } else {
    endpoint_ = *results.begin();
  }
  socket_.open(endpoint_.protocol(), ec);
  if (ec) throw std::runtime_error("output " + this->destination() + ": cannot open a UDP socket: " + ec.message());
  socket_.non_blocking(true, ec);
  // A larger send buffer absorbs a chunk's burst of packets; the kernel caps it at wmem_max.
  socket_.set_option(asio::socket_base::send_buffer_size(4 << 20), ec);
  socket_.connect(endpoint_, ec);  // UDP: no packet is sent; picks the route and source address
  connected_ = !ec;
}

bool UdpSender::send(const void* data, size_t bytes) noexcept {
  boost::system::error_code ec;
  const size_t sent = connected_ ? socket_.send(asio::buffer(data, bytes), 0, ec)
                                 : socket_.send_to(asio::buffer(data, bytes), endpoint_, 0, ec);
  if (!ec && sent == bytes) {
    counters_.datagrams.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  count_failure(ec ? ec : asio::error::message_size);
  return false;
}

void UdpSender::count_failure(const boost::system::error_code& ec) noexcept {
  last_error_ = ec;
  if (ec == asio::error::connection_refused)
    counters_.refused.fetch_add(1, std::memory_order_relaxed);
  else if (ec == asio::error::would_block || ec == asio::error::no_buffer_space)
    counters_.buffer_full.fetch_add(1, std::memory_order_relaxed);
  else
    counters_.other.fetch_add(1, std::memory_order_relaxed);
}

UdpSender::BatchResult UdpSender::send_batch(DatagramBatch& batch) noexcept {
  BatchResult r;
  const size_t n = batch.size();
  mmsghdr* msgs = batch.messages(connected_ ? nullptr : endpoint_.data(), socklen_t(endpoint_.size()));
  for (size_t i = 0; i < n;) {
    const int done = ::sendmmsg(socket_.native_handle(), msgs + i, unsigned(n - i), MSG_DONTWAIT);
    if (done > 0) {
      for (size_t k = i; k < i + size_t(done); ++k) {
        // A datagram is sent whole or not at all; msg_len says how much went.
        if (msgs[k].msg_len == batch.bytes(k)) {
          ++r.sent;
          r.bytes += batch.bytes(k);
        } else {
          count_failure(asio::error::message_size);
        }
      }
      i += size_t(done);
      continue;
    }
    // The datagram at i was refused (the call reports the first failure): count it, go on.
    count_failure(boost::system::error_code(done < 0 ? errno : EIO, boost::system::system_category()));
    ++i;
  }
  counters_.datagrams.fetch_add(r.sent, std::memory_order_relaxed);
  return r;
}

std::string UdpSender::destination() const {
  return endpoint_.address().to_string() + ":" + std::to_string(endpoint_.port());
}

}  // namespace vigil
