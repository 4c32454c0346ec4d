#include "wire/udp_sender.hpp"

#include <boost/asio/error.hpp>
#include <arpa/inet.h>
#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstring>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <stdexcept>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103  // linux/udp.h, Linux >= 4.18
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

namespace vigil {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {

// The socket options of a multicast destination: outgoing interface, hop limit, loop. Throws
// naming the destination and the option that failed.
void set_multicast_options(int fd, bool v6, const MulticastSettings& m, const std::string& destination) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("output " + destination + ": " + what + ": " + std::strerror(errno));
  };
  const int hops = int(m.ttl), loop = m.loop ? 1 : 0;
  if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MULTICAST_HOPS : IP_MULTICAST_TTL, &hops, sizeof hops))
    fail("multicast_ttl " + std::to_string(m.ttl));
  if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MULTICAST_LOOP : IP_MULTICAST_LOOP, &loop, sizeof loop))
    fail("multicast_loop");
  if (m.interface.empty()) return;
  if (!set_multicast_interface(fd, v6, m.interface))
    fail(errno == ENODEV ? "multicast_interface '" + m.interface + "'" : "multicast_interface " + m.interface);
}

}  // namespace

bool set_multicast_interface(int fd, bool v6, const std::string& interface) noexcept {
  ip_mreqn by{};
  if (!v6 && inet_pton(AF_INET, interface.c_str(), &by.imr_address) == 1)
    return setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &by, sizeof by) == 0;
  const int index = int(if_nametoindex(interface.c_str()));
  if (index == 0) {
    errno = ENODEV;
    return false;
  }
  by.imr_ifindex = index;
  return (v6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &index, sizeof index)
             : setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &by, sizeof by)) == 0;
}

UdpSender::UdpSender(asio::io_context& io, const Endpoint& destination, const MulticastSettings& multicast)
    : socket_(io) {
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
  if (endpoint_.address().is_multicast())
    set_multicast_options(socket_.native_handle(), endpoint_.address().is_v6(), multicast, this->destination());
  // A larger send buffer absorbs a chunk's burst of packets; the kernel caps it at wmem_max.
  socket_.set_option(asio::socket_base::send_buffer_size(4 << 20), ec);
  socket_.connect(endpoint_, ec);  // UDP: no packet is sent; picks the route and source address
  connected_ = !ec;
  msgs_.resize(kMaxBatch);
  groups_.resize(kMaxBatch);
  control_.resize(kMaxBatch * CMSG_SPACE(sizeof(uint16_t)));
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

void UdpSender::count_failure(const boost::system::error_code& ec, size_t datagrams) noexcept {
  last_error_ = ec;
  if (ec == asio::error::connection_refused)
    counters_.refused.fetch_add(datagrams, std::memory_order_relaxed);
  else if (ec == asio::error::would_block || ec == asio::error::no_buffer_space)
    counters_.buffer_full.fetch_add(datagrams, std::memory_order_relaxed);
  else
    counters_.other.fetch_add(datagrams, std::memory_order_relaxed);
}

size_t UdpSender::group(DatagramBatch& batch, size_t from) noexcept {
  // A GSO send carries at most 64 segments and one IP datagram's worth of payload.
  constexpr size_t kMaxSegments = 64, kMaxGsoBytes = 65000;
  const size_t n = batch.size();
  size_t m = 0;
  for (size_t i = from; i < n && m < kMaxBatch; ++m) {
    const size_t seg = batch.bytes(i);
    size_t j = i + 1, bytes = seg;
    if (gso_)
      while (j < n && j - i < kMaxSegments && batch.bytes(j - 1) == seg && batch.bytes(j) <= seg &&
             bytes + batch.bytes(j) <= kMaxGsoBytes)
        bytes += batch.bytes(j++);
    groups_[m] = {i, j - i, bytes};
    mmsghdr& h = msgs_[m];
    h = mmsghdr{};
    if (!connected_) {
      h.msg_hdr.msg_name = endpoint_.data();
      h.msg_hdr.msg_namelen = socklen_t(endpoint_.size());
    }
    h.msg_hdr.msg_iov = batch.iov(i);
    h.msg_hdr.msg_iovlen = j - i;
    if (j - i > 1) {
      char* c = control_.data() + m * CMSG_SPACE(sizeof(uint16_t));
      h.msg_hdr.msg_control = c;
      h.msg_hdr.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
      cmsghdr* cm = CMSG_FIRSTHDR(&h.msg_hdr);
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const uint16_t size = uint16_t(seg);
      std::memcpy(CMSG_DATA(cm), &size, sizeof size);
    }
    i = j;
  }
  return m;
}

UdpSender::BatchResult UdpSender::send_batch(DatagramBatch& batch) noexcept {
  BatchResult r;
  for (size_t from = 0; from < batch.size();) {  // kMaxBatch messages at a time
    const size_t m = send_messages(batch, from, r);
    from = groups_[m - 1].first + groups_[m - 1].count;
  }
  counters_.datagrams.fetch_add(r.sent, std::memory_order_relaxed);
  return r;
}

size_t UdpSender::send_messages(DatagramBatch& batch, size_t from, BatchResult& r) noexcept {
  size_t m = group(batch, from);
  for (size_t k = 0; k < m;) {
    const int done = ::sendmmsg(socket_.native_handle(), msgs_.data() + k, unsigned(m - k), MSG_DONTWAIT);
    if (done > 0) {
      for (size_t q = k; q < k + size_t(done); ++q) {
        if (msgs_[q].msg_len == groups_[q].bytes) {
          r.sent += groups_[q].count;
          r.bytes += groups_[q].bytes;
          for (size_t i = groups_[q].first; i < groups_[q].first + groups_[q].count; ++i) r.items += batch.items(i);
        } else {  // sent short: cannot happen for UDP, counted if it does
          count_failure(asio::error::message_size, groups_[q].count);
        }
      }
      k += size_t(done);
      continue;
    }
    const int err = done < 0 ? errno : EIO;
    const Message& g = groups_[k];
    if (g.count > 1 && (err == EINVAL || err == EIO || err == EOPNOTSUPP || err == ENOPROTOOPT)) {
      gso_ = false;  // this kernel or route cannot segment: from here on, one datagram at a time
      m = group(batch, g.first);
      k = 0;
      continue;
    }
    // The send at k was refused (the call reports the first failure): count it, go on.
    count_failure(boost::system::error_code(err, boost::system::system_category()), g.count);
    ++k;
  }
  return m;
}

std::string UdpSender::destination() const {
  return endpoint_.address().to_string() + ":" + std::to_string(endpoint_.port());
}

}  // namespace vigil
