// SpscQueue: the only way threads hand things over. One producer thread, one consumer thread.
// A thin wrapper on boost::lockfree::spsc_queue (wait-free for one producer and one consumer;
// its indices sit on separate cache lines and each push/pop is a release/acquire pair).
#pragma once

#include <boost/lockfree/spsc_queue.hpp>
#include <cstddef>
#include <type_traits>

#include "core/doorbell.hpp"

namespace vigil {

template <typename T>
class SpscQueue {
 public:
  // capacity: how many items may wait; the one allocation happens here, never later. Every slot
  // is written once here (filled and drained on the constructing thread, before any producer or
  // consumer runs), so its pages are resident: otherwise the ring's pages are first touched one
  // by one as items pass — page faults on the real-time threads, and resident memory that creeps
  // up for as long as the ring takes to wrap (found by the soak test: the 4 MiB event ring).
  explicit SpscQueue(size_t capacity) : q_(capacity) {
    if constexpr (std::is_default_constructible_v<T>) {
      const T blank{};
      while (q_.push(blank)) {
      }
      T out;
      while (q_.pop(out)) {
      }
    }
  }

  // Producer thread only. False when full (the item was not queued). RT-safe; wakes a consumer
  // sleeping in wait_for_item() (a system call only when one sleeps).
  bool push(const T& item) noexcept {
    if (!q_.push(item)) return false;
    bell_.ring();
    return true;
  }
  // Producer thread only: push() that wakes nobody. The consumer sees the item at its next look
  // (or its wait's timeout); the producer wakes it with a later push() or wake().
  bool push_quietly(const T& item) noexcept {
    if (!q_.push(item)) return false;
    bell_.ring_quietly();
    return true;
  }
  // Producer thread only: wakes a consumer whose wait the items pushed so far satisfy.
  void wake() noexcept { bell_.wake(); }
  // Consumer thread only: returns when an item is there, or after at most timeout_ns (check
  // pop()'s result: it may also return early). Blocks: for a consumer with nothing else to do.
  void wait_for_item(int64_t timeout_ns) noexcept { wait_for_items(1, timeout_ns); }
  // Consumer thread only: returns once `items` are there (pushes after it found fewer), or after
  // at most timeout_ns (it may return sooner: count again). The producer's pushes wake it once.
  void wait_for_items(size_t items, int64_t timeout_ns) noexcept {
    const uint32_t ticket = bell_.ticket();
    const size_t have = q_.read_available();
    if (have >= items) return;
    bell_.wait(ticket, timeout_ns, uint32_t(items - have));
  }
  // Consumer thread only. False when empty. RT-safe.
  bool pop(T& item) noexcept { return q_.pop(item); }
  // Consumer thread only.
  size_t read_available() const noexcept { return q_.read_available(); }
  // Producer thread only.
  size_t write_available() const noexcept { return q_.write_available(); }

 private:
  boost::lockfree::spsc_queue<T> q_;
  Doorbell bell_;
};

}  // namespace vigil
