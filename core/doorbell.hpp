// Doorbell: wakes a consumer thread sleeping for the next item of a queue, without it polling.
// The producer rings after every push (one atomic add; a futex wake only while the consumer
// sleeps); the consumer takes a ticket, looks at the queue, and sleeps on the ticket only when it
// found nothing — so a push between the look and the sleep is never missed (the futex compares
// the ticket atomically). Every sleep is also bounded by a timeout, so a consumer that waits for
// something other than a push (the end of the stream) still looks again soon. A consumer may ask
// to sleep until several rings (items) have come, so that a producer that pushes one item at a
// time wakes it once for a batch (CaptureLoop: an unpaced source waiting for free pool chunks);
// and a producer that knows more pushes follow at once may ring quietly and wake the consumer
// once for several (PipelineWorker handing chunks to the output thread while input waits).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/futex.hpp"

namespace vigil {

class Doorbell {
 public:
  // Producer.
  void ring() noexcept { wake_if_due(ticket_.fetch_add(1, std::memory_order_seq_cst) + 1); }
  // Producer: counts the push without waking anyone; the producer's next ring() or wake() wakes a
  // sleeper whose batch is due by then (a producer that knows more pushes follow at once).
  void ring_quietly() noexcept { ticket_.fetch_add(1, std::memory_order_seq_cst); }
  // Producer: wakes a sleeper whose batch the rings so far completed (after ring_quietly()).
  void wake() noexcept { wake_if_due(ticket_.load(std::memory_order_seq_cst)); }
  // Consumer: take before looking at the queue.
  uint32_t ticket() const noexcept { return ticket_.load(std::memory_order_seq_cst); }
  // Consumer: sleeps until the bell has rung `rings` times since `ticket`, for at most timeout_ns
  // (it may return sooner: look at the queue again).
  void wait(uint32_t ticket, int64_t timeout_ns, uint32_t rings = 1) noexcept {
    wake_at_.store(ticket + rings, std::memory_order_seq_cst);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t now = ticket_.load(std::memory_order_seq_cst);
    if (now - ticket < rings) futex_wait(ticket_, now, timeout_ns);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

 private:
  void wake_if_due(uint32_t ticket) noexcept {
    // Dekker with wait(): either this sees the sleeper (and the ticket it waits for), or the
    // sleeper's look at the ticket comes after this ring's.
    if (sleepers_.load(std::memory_order_seq_cst) > 0 &&
        int32_t(ticket - wake_at_.load(std::memory_order_seq_cst)) >= 0)
      futex_wake(ticket_, false);
  }

  std::atomic<uint32_t> ticket_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint32_t> wake_at_{0};  // the sleeping consumer's ticket to be woken at
};

}  // namespace vigil
