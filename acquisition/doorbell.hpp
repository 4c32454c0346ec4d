// Doorbell: wakes a consumer thread sleeping for the next item of a queue, without it polling.
// The producer rings after every push (one atomic add; a futex wake only while the consumer
// sleeps); the consumer takes a ticket, looks at the queue, and sleeps on the ticket only when it
// found nothing — so a push between the look and the sleep is never missed (the futex compares
// the ticket atomically). Every sleep is also bounded by a timeout, so a consumer that waits for
// something other than a push (the end of the stream) still looks again soon.
#pragma once

#include <atomic>
#include <cstdint>

#include "dsp/futex.hpp"

namespace vigil {

class Doorbell {
 public:
  // Producer.
  void ring() noexcept {
    ticket_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(ticket_, false);
  }
  // Consumer: take before looking at the queue.
  uint32_t ticket() const noexcept { return ticket_.load(std::memory_order_seq_cst); }
  // Consumer: sleeps unless the bell rang since `ticket`, for at most timeout_ns.
  void wait(uint32_t ticket, int64_t timeout_ns) noexcept {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (ticket_.load(std::memory_order_seq_cst) == ticket) futex_wait(ticket_, ticket, timeout_ns);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

 private:
  std::atomic<uint32_t> ticket_{0};
  std::atomic<uint32_t> sleepers_{0};
};

}  // namespace vigil
