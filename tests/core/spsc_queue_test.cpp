// Two-thread stress of the chunk hand-over: every chunk arrives, in order, none lost.
#include "core/spsc_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "acquisition/chunk.hpp"

namespace vigil {
namespace {

TEST(SpscQueue, MillionChunksThroughARecycledPoolArriveInOrder) {
  constexpr uint64_t kChunks = 1'000'000;
  constexpr uint32_t kPool = 64;
  std::vector<Chunk> pool(kPool);
  SpscQueue<Chunk*> free_q(kPool), full_q(kPool);
  for (Chunk& c : pool) ASSERT_TRUE(free_q.push(&c));

  std::thread producer([&] {
    for (uint64_t seq = 0; seq < kChunks;) {
      Chunk* c = nullptr;
      if (!free_q.pop(c)) {
        std::this_thread::yield();
        continue;
      }
      c->header.sequence = seq;
      c->header.first_frame = seq * 7;
      while (!full_q.push(c)) std::this_thread::yield();  // cannot stay full: the pool is bounded
      ++seq;
    }
  });

  uint64_t expected = 0, mismatches = 0;
  while (expected < kChunks) {
    Chunk* c = nullptr;
    if (!full_q.pop(c)) {
      std::this_thread::yield();
      continue;
    }
    if (c->header.sequence != expected || c->header.first_frame != expected * 7) ++mismatches;
    ++expected;
    ASSERT_TRUE(free_q.push(c));
  }
  producer.join();
  EXPECT_EQ(expected, kChunks);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(full_q.read_available(), 0u);
  // Every chunk is back in the free queue: nothing leaked.
  Chunk* c = nullptr;
  uint32_t back = 0;
  while (free_q.pop(c)) ++back;
  EXPECT_EQ(back, kPool);
}

TEST(SpscQueue, PushFailsWhenFullAndPopWhenEmpty) {
  SpscQueue<int> q(2);
  int v = 0;
  EXPECT_FALSE(q.pop(v));
  EXPECT_TRUE(q.push(1));
  EXPECT_TRUE(q.push(2));
  EXPECT_FALSE(q.push(3));
  EXPECT_TRUE(q.pop(v));
  EXPECT_EQ(v, 1);
  EXPECT_TRUE(q.pop(v));
  EXPECT_EQ(v, 2);
}

// The consumer of the wake-up tests: pops `items` values 0, 1, ... in order, sleeping in
// wait_for_item() (10 s timeout) whenever the queue is empty.
void consume_in_order_sleeping(SpscQueue<uint32_t>& q, uint32_t items) {
  uint32_t expected = 0;
  while (expected < items) {
    uint32_t v;
    if (q.pop(v)) {
      ASSERT_EQ(v, expected);
      ++expected;
      continue;
    }
    q.wait_for_item(10'000'000'000);
  }
}

// A consumer that sleeps in wait_for_item() between items (the pipeline and output threads' idle
// state) gets every item, in order: a push between its look at the queue and its sleep is never
// lost. The producer pauses at random so the consumer really falls asleep, often. With a 10 s
// timeout, a lost wake-up would show as a run far longer than the bound below.
TEST(SpscQueue, ASleepingConsumerIsWokenByEveryPush) {
  SpscQueue<uint32_t> q(8);
  constexpr uint32_t kItems = 20000;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread producer([&] {
    uint32_t seed = 1;
    for (uint32_t i = 0; i < kItems;) {
      if (!q.push(i)) continue;
      ++i;
      seed = seed * 1664525u + 1013904223u;
      if ((seed >> 24) < 8) std::this_thread::sleep_for(std::chrono::microseconds(seed >> 28));
    }
  });
  ASSERT_NO_FATAL_FAILURE(consume_in_order_sleeping(q, kItems));
  producer.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 8.0);  // one lost wake-up alone would take 10 s
}

// A consumer waiting for a batch (wait_for_items: the capture thread of an unpaced source) sleeps
// through the pushes before the batch is complete and is woken by its last. Returns before that
// are counted: at most one can be a race (a push just before the consumer's first sleep); a
// wake-up per push, as wait_for_item() gives, would make three.
TEST(SpscQueue, AConsumerWaitingForABatchIsWokenOnlyByItsLastPush) {
  SpscQueue<int> q(8);
  std::atomic<int> early{0};
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    while (q.read_available() < 4) {
      q.wait_for_items(4, 10'000'000'000);
      if (q.read_available() < 4) early.fetch_add(1);
    }
    done = true;
  });
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the consumer asleep again
    ASSERT_TRUE(q.push(i));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(q.push(3));
  while (!done.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(done.load()) << "the batch's last push did not wake the consumer (its timeout is 10 s)";
  consumer.join();
  EXPECT_LE(early.load(), 1);
}

// push_quietly() (the pipeline thread handing chunks to the output thread while more input
// waits) queues the item without waking a sleeping consumer; the producer's wake() or next
// push() wakes it, with every item pushed so far there.
TEST(SpscQueue, ItemsPushedQuietlyWakeTheConsumerAtTheNextPushOrWake) {
  SpscQueue<int> q(8);
  std::atomic<int> woken{0}, seen{0};
  std::thread consumer([&] {
    for (int round = 0; round < 2; ++round) {
      while (q.read_available() == 0) q.wait_for_item(10'000'000'000);
      seen.store(int(q.read_available()));
      int v;
      while (q.pop(v)) {
      }
      woken.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the consumer asleep
  ASSERT_TRUE(q.push_quietly(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(woken.load(), 0) << "a quiet push woke the consumer";
  q.wake();
  const auto t0 = std::chrono::steady_clock::now();
  while (woken.load() < 1 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(woken.load(), 1) << "wake() did not wake the consumer (its timeout is 10 s)";
  EXPECT_EQ(seen.load(), 1);

  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // asleep again
  ASSERT_TRUE(q.push_quietly(2));
  ASSERT_TRUE(q.push_quietly(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(woken.load(), 1) << "quiet pushes woke the consumer";
  ASSERT_TRUE(q.push(4));
  consumer.join();  // returns only once the loud push woke it (or after 10 s: checked below)
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(seen.load(), 3);
}

// The pipeline thread's rule (QuietHandoff): bursts of quiet pushes, each ended by a loud one.
// A consumer sleeping between items gets every item, in order, never waiting for its timeout.
TEST(SpscQueue, BurstsOfQuietPushesEndedByALoudOneLoseNoWakeUp) {
  SpscQueue<uint32_t> q(16);
  constexpr uint32_t kItems = 20000;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread producer([&] {
    uint32_t seed = 7;
    for (uint32_t i = 0; i < kItems;) {
      seed = seed * 1664525u + 1013904223u;
      const uint32_t burst = std::min<uint32_t>(1 + (seed >> 29), kItems - i);  // 1 to 8
      for (uint32_t k = 0; k < burst; ++k) {
        while (q.write_available() == 0) std::this_thread::yield();
        const bool pushed = k + 1 < burst ? q.push_quietly(i) : q.push(i);
        EXPECT_TRUE(pushed);  // the only producer found room
        ++i;
      }
      if (((seed >> 20) & 15) < 2) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  ASSERT_NO_FATAL_FAILURE(consume_in_order_sleeping(q, kItems));
  producer.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 8.0);  // one lost wake-up alone would take 10 s
}

TEST(SpscQueue, WaitForItemReturnsAtOnceWithAnItemAndAfterTheTimeoutWithout) {
  SpscQueue<int> q(2);
  auto t0 = std::chrono::steady_clock::now();
  q.wait_for_item(20'000'000);  // 20 ms, nothing pushed
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(15));
  ASSERT_TRUE(q.push(7));
  t0 = std::chrono::steady_clock::now();
  q.wait_for_item(10'000'000'000);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

}  // namespace
}  // namespace vigil
