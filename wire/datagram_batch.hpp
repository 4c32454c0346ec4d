// DatagramBatch: up to `capacity` datagrams built in place, for UdpSender::send_batch to hand to
// the kernel together (sendmmsg(2), with runs of equal-size datagrams as one UDP GSO send). All
// memory is allocated here. A datagram may carry several items (VITA 49 packets in a VRL frame):
// commit() says how many, and send_batch counts them.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vigil {

class DatagramBatch {
 public:
  DatagramBatch(size_t capacity, size_t max_bytes)
      : max_bytes_(max_bytes), data_(capacity * max_bytes), iov_(capacity), items_(capacity) {}

  // Where the next datagram is built (max_bytes() room); commit() adds it. Not when full().
  uint8_t* next() noexcept { return data_.data() + count_ * max_bytes_; }
  void commit(size_t bytes, uint32_t items = 1) noexcept {
    iov_[count_] = {next(), bytes};
    items_[count_] = items;
    ++count_;
  }
  bool full() const noexcept { return count_ == iov_.size(); }
  size_t size() const noexcept { return count_; }
  size_t max_bytes() const noexcept { return max_bytes_; }
  size_t bytes(size_t i) const noexcept { return iov_[i].iov_len; }
  uint32_t items(size_t i) const noexcept { return items_[i]; }
  void clear() noexcept { count_ = 0; }

  iovec* iov(size_t i) noexcept { return &iov_[i]; }

 private:
  size_t max_bytes_;
  std::vector<uint8_t> data_;
  std::vector<iovec> iov_;
  std::vector<uint32_t> items_;
  size_t count_ = 0;
};

}  // namespace vigil
