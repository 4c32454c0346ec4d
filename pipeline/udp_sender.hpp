// UdpSender: one non-blocking UDP socket to one destination (Boost.Asio). Sending never waits:
// a full socket buffer or an unreachable receiver is counted by the caller, not retried.
// Thread: output thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/settings.hpp"

namespace vigil {

class UdpSender {
 public:
  // Resolves the destination (numeric or a name) now. Throws std::runtime_error saying which
  // destination failed and why.
  UdpSender(boost::asio::io_context& io, const Endpoint& destination);
  // True when the whole datagram was handed to the kernel.
  bool send(const void* data, size_t bytes) noexcept;
  std::string last_error() const { return last_error_.message(); }
  std::string destination() const;

 private:
  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint endpoint_;
  boost::system::error_code last_error_;
};

}  // namespace vigil
