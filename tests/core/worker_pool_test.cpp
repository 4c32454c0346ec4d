// The worker pool runs every task of a run exactly once, whatever the task count against the
// thread count, run after run (a helper late from one run must not take a task of the next), and
// its threads really share the work.
#include "core/worker_pool.hpp"

#include "core/thread_name.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace vigil {
namespace {

// `runs` runs of 1..max_tasks tasks in turn: every task of every run exactly once.
void expect_every_task_once(WorkerPool& pool, uint32_t runs, uint32_t max_tasks) {
  std::vector<std::atomic<uint32_t>> hits(max_tasks);
  for (uint32_t run = 0; run < runs; ++run) {
    const uint32_t tasks = 1 + run % max_tasks;
    for (uint32_t t = 0; t < tasks; ++t) hits[t].store(0, std::memory_order_relaxed);
    auto fn = [&](uint32_t t) { hits[t].fetch_add(1, std::memory_order_relaxed); };
    pool.run(tasks, fn);
    for (uint32_t t = 0; t < tasks; ++t)
      ASSERT_EQ(hits[t].load(std::memory_order_relaxed), 1u) << pool.threads() << " threads, run " << run << ", task " << t;
  }
}

TEST(WorkerPool, EveryTaskRunsExactlyOncePerRun) {
  for (uint32_t threads : {1u, 2u, 3u, 8u}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    expect_every_task_once(pool, 20000, 13);
  }
}

// The helpers carry the pool's name and their number (what top -H and perf show), the caller
// keeps its own. Four tasks that wait for each other must run on all four threads at once.
TEST(WorkerPool, HelpersAreNamedAfterThePool) {
  name_this_thread("pool-test-main");
  ASSERT_EQ(this_thread_name(), "pool-test-main");
  WorkerPool pool(4, false, "tpool");
  std::atomic<uint32_t> started{0};
  std::mutex m;
  std::set<std::string> names;
  auto task = [&](uint32_t) {
    started.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 4 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    const std::lock_guard<std::mutex> lock(m);
    names.insert(this_thread_name());
  };
  pool.run(4, task);
  EXPECT_EQ(names, (std::set<std::string>{"pool-test-main", "tpool-1", "tpool-2", "tpool-3"}));
  // Linux keeps 15 bytes of a name: a longer one is cut, not refused.
  name_this_thread("a-name-longer-than-fifteen");
  EXPECT_EQ(this_thread_name(), "a-name-longer-t");
}

// busy_poll: helpers never sleep; every task still once, and the pool still stops.
TEST(WorkerPool, BusyPollingHelpersRunEveryTaskOnceAndStop) {
  WorkerPool pool(3, true);
  expect_every_task_once(pool, 2000, 8);
}

TEST(WorkerPool, MoreTasksThanATicketCountsRunInRounds) {
  WorkerPool pool(3);
  std::vector<std::atomic<uint8_t>> hits(200000);
  auto fn = [&](uint32_t t) { hits[t].fetch_add(1, std::memory_order_relaxed); };
  pool.run(uint32_t(hits.size()), fn);
  for (size_t t = 0; t < hits.size(); ++t) ASSERT_EQ(hits[t].load(), 1u) << t;
}

TEST(WorkerPool, ZeroTasksReturnAtOnceAndBadSizesAreRefused) {
  WorkerPool pool(2);
  int calls = 0;
  auto fn = [&](uint32_t) { ++calls; };
  pool.run(0, fn);
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(WorkerPool(0), std::invalid_argument);
  EXPECT_THROW(WorkerPool(257), std::invalid_argument);
  EXPECT_GE(WorkerPool::hardware_threads(), 1u);
}

// Helpers asleep (a pause far longer than their spin) are woken for every run, each for its
// task: every task of a run waits (up to 5 s) until all three have started, which only three
// threads at once can do — a helper not woken would leave the caller's task waiting alone.
TEST(WorkerPool, HelpersAsleepBetweenRunsAreWokenForEveryRun) {
  WorkerPool pool(3);
  for (int run = 0; run < 30; ++run) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the helpers go to sleep
    std::atomic<int> started{0}, met{0};
    auto fn = [&](uint32_t) {
      started.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (started.load() < 3 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      if (started.load() == 3) met.fetch_add(1);
    };
    pool.run(3, fn);
    ASSERT_EQ(met.load(), 3) << "run " << run << ": a task ran without the others (a helper not woken)";
  }
}

TEST(WorkerPool, HelpersTakePartOfTheWork) {
  WorkerPool pool(3);
  std::mutex m;
  std::set<std::thread::id> seen;
  for (int run = 0; run < 200 && seen.size() < 2; ++run) {
    auto fn = [&](uint32_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // long enough for a helper to wake
      std::lock_guard<std::mutex> lock(m);
      seen.insert(std::this_thread::get_id());
    };
    pool.run(6, fn);
  }
  EXPECT_GE(seen.size(), 2u);  // the caller alone would be one thread
}

}  // namespace
}  // namespace vigil
