// SpscQueue: the only way threads hand things over. One producer thread, one consumer thread.
// A thin wrapper on boost::lockfree::spsc_queue (wait-free for one producer and one consumer;
// its indices sit on separate cache lines and each push/pop is a release/acquire pair).
#pragma once

#include <boost/lockfree/spsc_queue.hpp>
#include <cstddef>

namespace vigil {

template <typename T>
class SpscQueue {
 public:
  // capacity: how many items may wait; the one allocation happens here, never later.
  explicit SpscQueue(size_t capacity) : q_(capacity) {}

  // Producer thread only. False when full (the item was not queued). RT-safe.
  bool push(const T& item) noexcept { return q_.push(item); }
  // Consumer thread only. False when empty. RT-safe.
  bool pop(T& item) noexcept { return q_.pop(item); }
  // Consumer thread only.
  size_t read_available() const noexcept { return q_.read_available(); }
  // Producer thread only.
  size_t write_available() const noexcept { return q_.write_available(); }

 private:
  boost::lockfree::spsc_queue<T> q_;
};

}  // namespace vigil
