#include "core/block_worker.hpp"

#include <stdexcept>

#include "core/cpu_relax.hpp"
#include "core/futex.hpp"
#include "core/thread_name.hpp"

namespace vigil {
namespace {

// Polls before sleeping, as WorkerPool's helpers do: short, so that an idle worker does not take
// the core the output thread needs.
constexpr int kSpins = 256;

}  // namespace

BlockWorker::BlockWorker(const std::string& name, uint32_t capacity) : mask_(capacity - 1) {
  if (capacity < 2 || capacity > 65536 || (capacity & (capacity - 1)) != 0)
    throw std::invalid_argument("block worker: capacity must be a power of two 2..65536, got " +
                                std::to_string(capacity));
  ring_.resize(capacity);
  thread_ = std::thread([this, name] {
    name_this_thread(name);
    main_loop();
  });
}

BlockWorker::~BlockWorker() {
  // A null job stops the worker after the jobs before it: a flag and a wake-up could both fall
  // between its last look and its sleep.
  submit(nullptr, nullptr, 0);
  thread_.join();
}

uint32_t BlockWorker::submit(Job fn, void* context, uint32_t arg) noexcept {
  const uint32_t ticket = submitted_.load(std::memory_order_relaxed) + 1;  // only this thread writes it
  // Job `ticket` takes the slot of job ticket - capacity: that one must have run.
  const uint32_t capacity = mask_ + 1;
  if (!finished(ticket - capacity)) wait(ticket - capacity);
  ring_[(ticket - 1) & mask_] = Entry{fn, context, arg};
  submitted_.store(ticket, std::memory_order_seq_cst);
  if (worker_sleeps_.load(std::memory_order_seq_cst)) futex_wake(submitted_, false);
  return ticket;
}

template <typename Ready>
uint32_t BlockWorker::await(std::atomic<uint32_t>& word, std::atomic<bool>& sleeps, Ready ready) noexcept {
  int spins = 0;
  for (;;) {
    const uint32_t value = word.load(std::memory_order_seq_cst);
    if (ready(value)) return value;
    if (++spins < kSpins) {
      cpu_relax();
      continue;
    }
    // Counted as asleep before the last look: a store after it is seen, or wakes us.
    sleeps.store(true, std::memory_order_seq_cst);
    if (word.load(std::memory_order_seq_cst) == value) futex_wait(word, value);
    sleeps.store(false, std::memory_order_seq_cst);
  }
}

void BlockWorker::wait(uint32_t ticket) noexcept {
  await(done_, waiter_sleeps_, [ticket](uint32_t done) { return int32_t(done - ticket) >= 0; });
}

void BlockWorker::main_loop() noexcept {
  uint32_t done = 0;
  for (;;) {
    const uint32_t queued = await(submitted_, worker_sleeps_, [done](uint32_t submitted) { return submitted != done; });
    for (; done != queued; ++done) {
      const Entry e = ring_[done & mask_];
      if (!e.fn) return;  // the destructor's: every job before it has run
      e.fn(e.context, e.arg);
      done_.store(done + 1, std::memory_order_seq_cst);
      if (waiter_sleeps_.load(std::memory_order_seq_cst)) futex_wake(done_, true);
    }
  }
}

}  // namespace vigil
