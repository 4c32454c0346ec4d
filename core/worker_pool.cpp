#include "core/worker_pool.hpp"

#include "core/cpu_relax.hpp"
#include "core/futex.hpp"
#include "core/thread_name.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vigil {
namespace {

// Polls before sleeping: the next stage's run follows within microseconds, and a futex wake
// costs tens of them. Short (~10-30 us), so helpers do not burn cores between chunks: with many
// services (or tests) on one machine, long spins of idle helpers starve the threads that work.
constexpr int kSpins = 256;

}  // namespace

uint32_t WorkerPool::hardware_threads() noexcept { return std::max(1u, std::thread::hardware_concurrency()); }

WorkerPool::WorkerPool(uint32_t threads, bool busy_poll, const std::string& name) : busy_poll_(busy_poll) {
  if (threads < 1 || threads > 256)
    throw std::invalid_argument("worker pool: threads must be 1..256, got " + std::to_string(threads));
  helpers_.reserve(threads - 1);
  // Each helper starts from generation 0, whenever it gets scheduled: reading the counter in the
  // thread instead could miss a run (or the destructor's wake-up) published before it started.
  for (uint32_t i = 1; i < threads; ++i)
    helpers_.emplace_back([this, helper = name + "-" + std::to_string(i)] {
      name_this_thread(helper);
      helper_main();
    });
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(generation_, true);
  for (std::thread& t : helpers_) t.join();
}

// Takes tasks until none of this run is left. The ticket carries its run's task count, so a late
// helper's ticket from a finished run reads as spent; a valid ticket's run cannot finish (nor a
// new run overwrite call_/fn_) before its task is done.
void WorkerPool::work() noexcept {
  for (;;) {
    const uint64_t ticket = ticket_.fetch_add(1, std::memory_order_acq_rel);
    const auto task = uint32_t(ticket & 0xFFFFFF), tasks = uint32_t((ticket >> 24) & 0xFFFF);
    if (task >= tasks) return;
    call_(fn_, task);
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == tasks && caller_sleeps_.load(std::memory_order_seq_cst))
      futex_wake(done_, false);
  }
}

void WorkerPool::helper_main() noexcept {
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    uint32_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (busy_poll_ || ++spins < kSpins) {
        cpu_relax();
      } else {
        // Counted as asleep before the last look: a run published after it is seen, or wakes us.
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(generation_, seen);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      }
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    work();
  }
}

void WorkerPool::run_erased(uint32_t tasks, Trampoline call, void* fn) noexcept {
  if (tasks == 0) return;
  if (helpers_.empty() || tasks == 1) {
    for (uint32_t t = 0; t < tasks; ++t) call(fn, t);
    return;
  }
  if (tasks > 0xFFFF) {  // a ticket counts up to 65535 tasks: the rest in further rounds
    struct Offset {
      Trampoline call;
      void* fn;
      uint32_t base;
    };
    for (uint32_t base = 0; base < tasks; base += 0xFFFF) {
      Offset o{call, fn, base};
      run_erased(std::min<uint32_t>(0xFFFF, tasks - base),
                 [](void* p, uint32_t task) {
                   const auto* off = static_cast<Offset*>(p);
                   off->call(off->fn, off->base + task);
                 },
                 &o);
    }
    return;
  }
  call_ = call;
  fn_ = fn;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t run = generation_.load(std::memory_order_relaxed) + 1;
  ticket_.store((uint64_t(run & 0xFFFFFF) << 40) | (uint64_t(tasks) << 24), std::memory_order_release);
  generation_.store(run, std::memory_order_seq_cst);
  // Wake only as many sleeping helpers as there are tasks beyond the caller's, and no system call
  // at all while none sleeps (spinning helpers see the new run by themselves).
  const uint32_t sleeping = sleepers_.load(std::memory_order_seq_cst);
  const uint32_t to_wake = std::min({tasks - 1, uint32_t(helpers_.size()), sleeping});
  if (to_wake == helpers_.size())
    futex_wake(generation_, true);
  else
    for (uint32_t i = 0; i < to_wake; ++i) futex_wake(generation_, false);
  work();
  int spins = 0;
  uint32_t d;
  while ((d = done_.load(std::memory_order_seq_cst)) != tasks) {
    if (++spins < kSpins) {
      cpu_relax();
    } else {
      caller_sleeps_.store(true, std::memory_order_seq_cst);
      if (done_.load(std::memory_order_seq_cst) == d) futex_wait(done_, d);
      caller_sleeps_.store(false, std::memory_order_seq_cst);
    }
  }
}

}  // namespace vigil
