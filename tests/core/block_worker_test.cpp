// The block worker runs every job once, in the order submitted, on its own thread; wait(ticket)
// returns only after that job (and every earlier one) has run, also when the queue wraps and the
// submitter must wait for room; the destructor runs what is still queued.
#include "core/block_worker.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_name.hpp"

namespace vigil {
namespace {

struct Log {
  std::vector<uint32_t> order;  // written by the worker only
  std::string thread;
};

void append(void* log, uint32_t arg) { static_cast<Log*>(log)->order.push_back(arg); }

TEST(BlockWorker, RunsJobsInOrderAndWaitSeesThemDone) {
  for (uint32_t capacity : {2u, 8u, 256u}) {
    SCOPED_TRACE("capacity " + std::to_string(capacity));
    Log log;
    log.order.reserve(20000);
    BlockWorker worker("vigil-bw-test", capacity);
    for (uint32_t i = 0; i < 20000; ++i) {
      const uint32_t ticket = worker.submit(&append, &log, i);
      ASSERT_EQ(ticket, i + 1);
      if (i % 97 == 0) {
        worker.wait(ticket);
        ASSERT_TRUE(worker.finished(ticket));
        // Everything up to this job has run, and nothing later was submitted yet.
        ASSERT_EQ(log.order.size(), size_t(i) + 1);
      }
    }
    worker.drain();
    ASSERT_EQ(log.order.size(), 20000u);
    for (uint32_t i = 0; i < 20000; ++i) ASSERT_EQ(log.order[i], i);
  }
}

TEST(BlockWorker, JobsRunOnTheNamedThreadWhileTheSubmitterGoesOn) {
  Log log;
  BlockWorker worker("vigil-bw-named");
  const auto slow = [](void* p, uint32_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    static_cast<Log*>(p)->thread = this_thread_name();
  };
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t ticket = worker.submit(slow, &log, 0);
  // submit() does not wait for the job: the worker sleeps 50 ms in it.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(40));
  EXPECT_FALSE(worker.finished(ticket));
  worker.wait(ticket);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  EXPECT_EQ(log.thread, "vigil-bw-named");
}

TEST(BlockWorker, DestructorRunsWhatIsQueued) {
  Log log;
  {
    BlockWorker worker("vigil-bw-test", 4);
    const auto slow = [](void* p, uint32_t arg) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      append(p, arg);
    };
    for (uint32_t i = 0; i < 10; ++i) worker.submit(slow, &log, i);
  }
  ASSERT_EQ(log.order.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) EXPECT_EQ(log.order[i], i);
}

TEST(BlockWorker, RejectsACapacityThatIsNotAPowerOfTwo) {
  EXPECT_THROW(BlockWorker("x", 3), std::invalid_argument);
  EXPECT_THROW(BlockWorker("x", 1), std::invalid_argument);
  EXPECT_THROW(BlockWorker("x", 1u << 17), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
