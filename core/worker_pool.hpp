// WorkerPool: threads() - 1 helper threads that, together with the calling thread, run the tasks
// of one run() at a time: the pipeline thread splits a stage's channels over the machine's cores
// (the CPU backend's FIR bank). No allocation per run(); a helper spins briefly for the next run
// and then sleeps on a futex, so an idle pool costs nothing; nobody makes a system call to wake
// a thread that is not asleep.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace vigil {

class WorkerPool {
 public:
  // threads: 1..256 in all, the caller of run() included (1: run() calls fn on the caller only).
  // busy_poll: helpers never sleep between runs (each keeps a core busy; no wake-up latency).
  // name: the helpers are named name-1, name-2, ... (core/thread_name.hpp; top -H shows them).
  // Throws std::invalid_argument, std::system_error (thread creation).
  explicit WorkerPool(uint32_t threads, bool busy_poll = false, const std::string& name = "vigil-pool");
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  uint32_t threads() const noexcept { return uint32_t(helpers_.size()) + 1; }

  // Calls fn(task) once for every task in [0, tasks), spread over the helpers and the caller;
  // returns when all have returned. fn must not throw. One caller at a time.
  template <typename F>
  void run(uint32_t tasks, F& fn) noexcept {
    run_erased(tasks, [](void* f, uint32_t task) { (*static_cast<F*>(f))(task); }, &fn);
  }

  // Hardware threads of this machine (at least 1).
  static uint32_t hardware_threads() noexcept;
  // pipeline.threads 0: one per core less one, at least 1 — the capture and output threads need a
  // core too. On the 2-vCPU machine a helper beside them cost more than it gave (unpaced, S2 at 64
  // channels 17.3-17.6x real time with one helper, 20.3-20.8x without; S3 142-223x, 353-358x;
  // S1 alike), its futex wake-ups and spinning taking the output thread's core.
  static uint32_t default_threads() noexcept { return hardware_threads() > 1 ? hardware_threads() - 1 : 1; }

  // How many parts to split `items` (channels, lanes) into: one per thread, at most one per item;
  // 1 without a pool.
  static uint32_t parts_for(const WorkerPool* pool, uint32_t items) noexcept {
    return pool ? std::max(1u, std::min(pool->threads(), items)) : 1;
  }
  // Part `part` of `items` split into `parts` contiguous ranges of near-equal size: [first, end).
  struct Range {
    uint32_t first, end;
  };
  static Range range(uint32_t items, uint32_t parts, uint32_t part) noexcept {
    return {uint32_t(uint64_t(items) * part / parts), uint32_t(uint64_t(items) * (part + 1) / parts)};
  }

 private:
  using Trampoline = void (*)(void*, uint32_t);
  void run_erased(uint32_t tasks, Trampoline call, void* fn) noexcept;
  void helper_main() noexcept;
  void work() noexcept;

  std::vector<std::thread> helpers_;
  Trampoline call_ = nullptr;
  void* fn_ = nullptr;
  // A ticket is the run's number (24 bits), its task count (16) and the next task (24), taken
  // with one fetch_add: task and count come from the same run, so a helper late from an earlier
  // run cannot take a task the count of another run would allow. Above 65535 tasks: rounds.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> done_{0};       // tasks finished in this run
  std::atomic<uint32_t> generation_{0}; // bumped per run: wakes the helpers
  std::atomic<uint32_t> sleepers_{0};   // helpers asleep on generation_ (or about to be)
  std::atomic<bool> caller_sleeps_{false};  // run()'s caller asleep on done_ (or about to be)
  std::atomic<bool> stop_{false};
  bool busy_poll_ = false;
};

}  // namespace vigil
