// Sleeping on and waking a 32-bit atomic through the Linux futex call, for the threads that hand
// work to each other (acquisition/Doorbell, dsp/WorkerPool). std::atomic::wait would do, but
// libstdc++'s spins and calls sched_yield a dozen times before it sleeps and takes no timeout: on
// a 2-vCPU guest, where every system call is dear, those yields were a sixth of an idle pool
// helper's time (perf, S3 unpaced, 2026-11-26). Elsewhere: std::atomic::wait, or a plain sleep
// for a timed wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

namespace vigil {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the futex word is the atomic itself");

// Sleeps while `word` holds `old` (compared atomically with going to sleep), until woken, or for
// at most timeout_ns (negative: no limit). It may also return early: callers look again.
inline void futex_wait(std::atomic<uint32_t>& word, uint32_t old, int64_t timeout_ns = -1) noexcept {
#ifdef __linux__
  const timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  // EAGAIN (no longer `old`), ETIMEDOUT, EINTR: all fine.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, old, timeout_ns < 0 ? nullptr : &ts,
          nullptr, 0);
#else
  if (timeout_ns < 0)
    word.wait(old, std::memory_order_seq_cst);
  else
    std::this_thread::sleep_for(std::chrono::nanoseconds(timeout_ns));
#endif
}

// Wakes one (all: every) thread asleep in futex_wait on `word`.
inline void futex_wake(std::atomic<uint32_t>& word, bool all) noexcept {
#ifdef __linux__
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, all ? INT32_MAX : 1, nullptr, nullptr, 0);
#else
  all ? word.notify_all() : word.notify_one();
#endif
}

}  // namespace vigil
