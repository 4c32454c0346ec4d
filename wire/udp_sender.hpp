// UdpSender: one non-blocking UDP socket to one destination (Boost.Asio). Sending never waits:
// a failure is counted here by its cause and the datagram is not retried.
// The socket is connected, so the kernel reports an ICMP "port unreachable" from the destination
// (no receiver listening) as ECONNREFUSED on a later send: that is how an absent receiver shows.
// Thread: send() on the output thread; the counters from any thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "wire/endpoint.hpp"
#include "wire/datagram_batch.hpp"

namespace vigil {

struct SendCounters {
  std::atomic<uint64_t> datagrams{0};    // handed whole to the kernel
  std::atomic<uint64_t> refused{0};      // ECONNREFUSED: the destination answered "port unreachable"
  std::atomic<uint64_t> buffer_full{0};  // EAGAIN / ENOBUFS: the socket or device queue is full
  std::atomic<uint64_t> other{0};        // anything else (no route, datagram too large, ...)
  uint64_t failures() const noexcept {
    return refused.load(std::memory_order_relaxed) + buffer_full.load(std::memory_order_relaxed) +
           other.load(std::memory_order_relaxed);
  }
};

// Makes fd's multicast datagrams leave by `interface` (an IPv4 address for an IPv4 group, or an
// interface's name), as a multicast output's socket is set. False with errno set when the kernel
// refuses or no interface has that name (errno ENODEV).
bool set_multicast_interface(int fd, bool v6, const std::string& interface) noexcept;

class UdpSender {
 public:
  // Resolves the destination (numeric or a name) now. Throws std::runtime_error saying which
  // destination failed and why. A destination with no route yet (network not up) is not an
  // error: the socket stays unconnected and its sends fail, counted, until the route exists.
  // A multicast destination gets `multicast`'s interface, hop limit and loop (ignored otherwise);
  // an interface that does not exist throws.
  UdpSender(boost::asio::io_context& io, const Endpoint& destination, const MulticastSettings& multicast = {});
  // True when the whole datagram was handed to the kernel; otherwise counted by cause.
  bool send(const void* data, size_t bytes) noexcept;
  // Every datagram of `batch`, in order, in as few sendmmsg(2) calls (of up to kMaxBatch sends)
  // as the kernel takes them. A run of equal-size datagrams (the last may be shorter) goes as one UDP GSO
  // send (UDP_SEGMENT: the kernel cuts it into those datagrams after one trip through the stack,
  // ~2.4x less sender time per datagram on loopback); where the kernel or the route cannot (an
  // old kernel, segments above the path MTU), this sender stops trying and sends them one by one.
  // A send the kernel refuses is counted by cause for each datagram in it (as send() would) and
  // skipped; the rest go on.
  static constexpr size_t kMaxBatch = 64;
  struct BatchResult {
    size_t sent = 0;   // datagrams handed whole to the kernel
    size_t bytes = 0;  // their bytes
    size_t items = 0;  // their items (DatagramBatch::commit)
  };
  BatchResult send_batch(DatagramBatch& batch) noexcept;
  bool segmenting() const noexcept { return gso_; }  // false once the kernel refused UDP GSO
  int native_handle() noexcept { return socket_.native_handle(); }  // tests: socket options
  const SendCounters& counters() const noexcept { return counters_; }
  std::string last_error() const { return last_error_.message(); }
  std::string destination() const;
  bool ipv6() const noexcept { return endpoint_.address().is_v6(); }  // its datagrams' headers are 20 bytes longer

 private:
  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint endpoint_;
  bool connected_ = false;
  void count_failure(const boost::system::error_code& ec, size_t datagrams = 1) noexcept;
  // One message per run of datagrams sent as one (a single datagram, or a GSO run).
  struct Message {
    size_t first = 0, count = 0, bytes = 0;
  };
  // Fills msgs_/groups_ with up to kMaxBatch messages from datagram `from` on; returns how many.
  size_t group(DatagramBatch& batch, size_t from) noexcept;
  // Sends the messages group() makes from `from` (regrouping if GSO is refused); returns how many
  // messages the last grouping made (its groups_ say where the next call starts).
  size_t send_messages(DatagramBatch& batch, size_t from, BatchResult& r) noexcept;
  bool gso_ = true;
  std::vector<mmsghdr> msgs_;
  std::vector<Message> groups_;
  std::vector<char> control_;  // one UDP_SEGMENT cmsg per message
  boost::system::error_code last_error_;
  SendCounters counters_;
};

}  // namespace vigil
