// BlockWorker: one thread that runs jobs handed to it by one other thread, in the order given,
// while that thread goes on with its own work. A NonUniformFirBank gives it its larger levels'
// blocks (FFTs and spectral sums that are due only a chunk or more later), so that a second core
// does them while the pipeline thread filters the next chunks: no per-chunk hand-off, one job per
// large block.
//
// Jobs are numbered from 1 in submission order; wait(ticket) returns once that job and all before
// it have run. The worker spins briefly for the next job, then sleeps on a futex; nobody makes a
// system call to wake a thread that is not asleep. It never spins for long, even under
// pipeline.busy_poll: its jobs are due half a block after they are handed over, so a wake-up's
// latency costs nothing, and a spinning worker would take a core from the threads that are due
// sooner. Single producer: submit() and wait() from one thread at a time (the bank's owner).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace vigil {

class BlockWorker {
 public:
  using Job = void (*)(void* context, uint32_t arg);

  // capacity: jobs that may wait at once, a power of two 2..65536 (submit() waits for room beyond).
  // name: the thread's (core/thread_name.hpp). Throws std::invalid_argument, std::system_error.
  explicit BlockWorker(const std::string& name = "vigil-blocks", uint32_t capacity = 256);
  ~BlockWorker();  // runs the jobs still queued, then joins
  BlockWorker(const BlockWorker&) = delete;
  BlockWorker& operator=(const BlockWorker&) = delete;

  // Queues fn(context, arg) and returns its ticket. fn must not throw. RT-safe (waits only when
  // `capacity` jobs are already queued).
  uint32_t submit(Job fn, void* context, uint32_t arg) noexcept;
  // Whether job `ticket` (and every earlier one) has run. Tickets compare modulo 2^32: a ticket
  // must be less than 2^31 jobs old.
  bool finished(uint32_t ticket) const noexcept {
    return int32_t(done_.load(std::memory_order_acquire) - ticket) >= 0;
  }
  // Returns once job `ticket` has run: spins briefly, then sleeps.
  void wait(uint32_t ticket) noexcept;
  // Returns once every job submitted so far has run.
  void drain() noexcept { wait(submitted_.load(std::memory_order_relaxed)); }

 private:
  struct Entry {
    Job fn = nullptr;  // null: the destructor's stop
    void* context = nullptr;
    uint32_t arg = 0;
  };
  void main_loop() noexcept;
  // Returns `word` once ready(word) holds: spins briefly, then sleeps on it with `sleeps` set, so
  // that whoever stores to it knows to wake us.
  template <typename Ready>
  static uint32_t await(std::atomic<uint32_t>& word, std::atomic<bool>& sleeps, Ready ready) noexcept;

  std::vector<Entry> ring_;
  uint32_t mask_;
  std::atomic<uint32_t> submitted_{0};  // jobs queued (futex word: the worker sleeps on it)
  std::atomic<uint32_t> done_{0};       // jobs run (futex word: wait() sleeps on it)
  std::atomic<bool> worker_sleeps_{false};
  std::atomic<bool> waiter_sleeps_{false};
  std::thread thread_;
};

}  // namespace vigil
