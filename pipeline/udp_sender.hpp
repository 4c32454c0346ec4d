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

#include "config/settings.hpp"
#include "pipeline/datagram_batch.hpp"

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

class UdpSender {
 public:
  // Resolves the destination (numeric or a name) now. Throws std::runtime_error saying which
  // destination failed and why. A destination with no route yet (network not up) is not an
  // error: the socket stays unconnected and its sends fail, counted, until the route exists.
  UdpSender(boost::asio::io_context& io, const Endpoint& destination);
  // True when the whole datagram was handed to the kernel; otherwise counted by cause.
  bool send(const void* data, size_t bytes) noexcept;
  // Every datagram of `batch`, in order, in as few sendmmsg(2) calls as the kernel takes them; a
  // datagram the kernel refuses is counted by cause (as send() would) and skipped, the rest go on.
  struct BatchResult {
    size_t sent = 0;   // datagrams handed whole to the kernel
    size_t bytes = 0;  // their bytes
  };
  BatchResult send_batch(DatagramBatch& batch) noexcept;
  const SendCounters& counters() const noexcept { return counters_; }
  std::string last_error() const { return last_error_.message(); }
  std::string destination() const;

 private:
  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint endpoint_;
  bool connected_ = false;
  void count_failure(const boost::system::error_code& ec) noexcept;
  boost::system::error_code last_error_;
  SendCounters counters_;
};

}  // namespace vigil
