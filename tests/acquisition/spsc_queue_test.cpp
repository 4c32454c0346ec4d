// Two-thread stress of the chunk hand-over: every chunk arrives, in order, none lost.
#include "acquisition/spsc_queue.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vigil
