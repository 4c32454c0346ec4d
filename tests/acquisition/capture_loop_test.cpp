// The capture loop never blocks a paced source: with no free chunk it drops, counts, and flags the
// next chunk. An unpaced one (no clock) it waits for instead: nothing is lost.
#include "acquisition/capture_loop.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "acquisition/chunk_pool.hpp"
#include "acquisition/synthetic_source.hpp"

namespace vigil {
namespace {

// Paced, but so fast (10^4 x real time) that it never waits: a device that does not wait for us.
SyntheticSpec fast(uint32_t chunk_frames, double duration_s) {
  SyntheticSpec s;
  s.rate_hz = 10000;
  s.channels = 2;
  s.chunk_frames = chunk_frames;
  s.rate_factor = 10000;
  s.duration_s = duration_s;
  s.signals.resize(1);
  s.signals[0].noise_rms = 0.1;
  return s;
}

TEST(CaptureLoop, PoolExhaustionIsCountedAndFlagged) {
  // 100 chunks of 100 frames, a pool of 4 and nobody consuming: 4 handed over, 96 dropped.
  SyntheticSource source(fast(100, 1.0));
  ChunkPool pool(4, 100 * 2 * 2);
  SpscQueue<Chunk*> free_q(4), full_q(4);
  for (uint32_t i = 0; i < 4; ++i) free_q.push(&pool.chunk(i));
  CaptureLoop loop(source, free_q, full_q, pool.bytes_per_chunk());
  loop.run();
  ASSERT_TRUE(loop.finished());
  EXPECT_EQ(loop.counters().chunks_captured.load(), 4u);
  EXPECT_EQ(loop.counters().chunks_dropped.load(), 96u);
  EXPECT_EQ(loop.counters().frames_dropped.load(), 9600u);
  EXPECT_EQ(loop.counters().frames_captured.load(), 400u);
  Chunk* c = nullptr;
  for (uint64_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(full_q.pop(c));
    EXPECT_EQ(c->header.sequence, k);
    EXPECT_EQ(c->header.first_frame, k * 100);
    EXPECT_EQ(c->header.flags & chunk_flags::kOverrunBefore, 0u);
  }
}

TEST(CaptureLoop, EveryFrameIsEitherDeliveredOrCountedAsLost) {
  // A slow consumer: chunks that arrive record how much was lost before them; the gaps in
  // first_frame must equal those counts exactly, and delivered + dropped = generated.
  constexpr uint32_t kFrames = 64;
  SyntheticSource source(fast(kFrames, 20.0));  // 200000 frames, 3125 chunks
  ChunkPool pool(3, kFrames * 2 * 2);
  SpscQueue<Chunk*> free_q(3), full_q(3);
  for (uint32_t i = 0; i < 3; ++i) free_q.push(&pool.chunk(i));
  CaptureLoop loop(source, free_q, full_q, pool.bytes_per_chunk());
  std::thread capture([&] { loop.run(); });

  uint64_t next_expected = 0, delivered = 0, lost_flagged = 0, inconsistencies = 0, flagged_chunks = 0;
  for (;;) {
    Chunk* c = nullptr;
    if (!full_q.pop(c)) {
      if (loop.finished() && !full_q.pop(c)) break;
      if (!c) continue;
    }
    const ChunkHeader& h = c->header;
    if (h.first_frame != next_expected + h.frames_lost_before) ++inconsistencies;
    if ((h.frames_lost_before > 0) != ((h.flags & chunk_flags::kOverrunBefore) != 0)) ++inconsistencies;
    flagged_chunks += h.frames_lost_before > 0;
    lost_flagged += h.frames_lost_before;
    delivered += h.frames;
    next_expected = h.first_frame + h.frames;
    if (delivered % (kFrames * 7) == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    free_q.push(c);
  }
  capture.join();
  const uint64_t total = 200000;
  EXPECT_EQ(inconsistencies, 0u);
  EXPECT_EQ(delivered, loop.counters().frames_captured.load());
  EXPECT_EQ(delivered + loop.counters().frames_dropped.load(), total);
  // Frames lost after the last delivered chunk are counted but not flagged (no chunk follows).
  EXPECT_LE(lost_flagged, loop.counters().frames_dropped.load());
  EXPECT_EQ(lost_flagged + (total - next_expected), loop.counters().frames_dropped.load());
  EXPECT_GT(flagged_chunks, 0u) << "the slow consumer should have caused drops";
  // The capture thread's log says when dropping starts and stops, once per episode (no line per
  // chunk): as many "dropping" lines as episodes, each but maybe the last followed by its end.
  RtLogRecord r;
  int starts = 0, ends = 0;
  while (loop.log().pop(r)) {
    const std::string text = r.text;
    if (text.find("dropping chunks") != std::string::npos) {
      ++starts;
      EXPECT_EQ(r.level, 4);
    } else if (text.find("free again after dropping") != std::string::npos) {
      ++ends;
      EXPECT_EQ(r.level, 5);
    }
  }
  EXPECT_GE(starts, 1);
  EXPECT_LE(starts, int(flagged_chunks) + 1);
  EXPECT_LE(ends, starts);
  if (loop.log().dropped() == 0) {  // (a full log queue drops lines, and counts them)
    EXPECT_GE(ends, starts - 1);
  }
}

TEST(ChunkPool, RejectsBadSizes) {
  EXPECT_THROW(ChunkPool(1, 100), std::invalid_argument);
  EXPECT_THROW(ChunkPool(4, 0), std::invalid_argument);
  EXPECT_THROW(ChunkPool(4, (size_t(1) << 30) + 1), std::invalid_argument);
}

TEST(ChunkPool, ChunksAreAlignedAndDisjoint) {
  ChunkPool pool(8, 100);
  for (uint32_t i = 0; i < pool.count(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.chunk(i).data) % 64, 0u);
    if (i > 0) {
      EXPECT_GE(pool.chunk(i).data - pool.chunk(i - 1).data, 100);
    }
  }
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

TEST(CaptureLoop, AnUnpacedSourceWaitsForThePipelineAndLosesNothing) {
  SyntheticSpec s = fast(64, 20.0);  // 200000 frames
  s.rate_factor = 0;
  SyntheticSource source(s);
  ChunkPool pool(3, 64 * 2 * 2);
  SpscQueue<Chunk*> free_q(3), full_q(3);
  for (uint32_t i = 0; i < 3; ++i) free_q.push(&pool.chunk(i));
  CaptureLoop loop(source, free_q, full_q, pool.bytes_per_chunk());
  std::thread capture([&] { loop.run(); });
  uint64_t next = 0, delivered = 0;
  for (;;) {  // a slow consumer, as above
    Chunk* c = nullptr;
    if (!full_q.pop(c)) {
      if (loop.finished() && !full_q.pop(c)) break;
      if (!c) continue;
    }
    EXPECT_EQ(c->header.first_frame, next);
    EXPECT_EQ(c->header.frames_lost_before, 0u);
    next = c->header.first_frame + c->header.frames;
    delivered += c->header.frames;
    if (delivered % (64 * 7) == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    free_q.push(c);
  }
  capture.join();
  EXPECT_EQ(delivered, 200000u);
  EXPECT_EQ(loop.counters().frames_dropped.load(), 0u);
}

// A paced source whose wall clock steps in chunk 2 (as WallClockWatch would flag it), with a pool
// of two chunks that nobody frees until chunk 3 is being read: chunks 2 and 3 are dropped, and the
// step goes on to chunk 4, the first handed over on the moved time line, with the loss.
class SteppingSource : public Source {
 public:
  SteppingSource(SpscQueue<Chunk*>& free_q, SpscQueue<Chunk*>& full_q) : free_(free_q), full_(full_q) {}
  SourceFormat format() const noexcept override { return {1000, 1, SampleFormat::kInt16, 10, 1.0f}; }
  std::string_view kind() const noexcept override { return "stepping"; }
  ReadStatus read(Chunk& chunk) noexcept override {
    if (k_ == 6) return ReadStatus::kEnd;
    ChunkHeader& h = chunk.header;
    h.first_frame = k_ * 10;
    h.frames = 10;
    h.channels = 1;
    if (k_ == 2) {
      h.flags |= chunk_flags::kClockStepped;
      h.clock_step_ns = -4'250'000'000;
    }
    if (k_ == 3) {  // the consumer frees one chunk: chunk 4 gets it
      Chunk* c = nullptr;
      if (full_.pop(c)) free_.push(c);
    }
    ++k_;
    return ReadStatus::kOk;
  }

 private:
  SpscQueue<Chunk*>& free_;
  SpscQueue<Chunk*>& full_;
  uint64_t k_ = 0;
};

TEST(CaptureLoop, AClockStepInADroppedChunkGoesOnTheNextChunkHandedOver) {
  ChunkPool pool(2, 10 * 2);
  SpscQueue<Chunk*> free_q(2), full_q(2);
  for (uint32_t i = 0; i < 2; ++i) free_q.push(&pool.chunk(i));
  SteppingSource source(free_q, full_q);
  CaptureLoop loop(source, free_q, full_q, pool.bytes_per_chunk());
  loop.run();
  EXPECT_EQ(loop.counters().chunks_dropped.load(), 3u);  // 2, 3 (no chunk free yet), 5
  Chunk* c = nullptr;
  ASSERT_TRUE(full_q.pop(c));
  EXPECT_EQ(c->header.first_frame, 10u);
  EXPECT_EQ(c->header.flags & chunk_flags::kClockStepped, 0u);
  EXPECT_EQ(c->header.clock_step_ns, 0);
  ASSERT_TRUE(full_q.pop(c));
  EXPECT_EQ(c->header.first_frame, 40u);
  EXPECT_NE(c->header.flags & chunk_flags::kClockStepped, 0u);
  EXPECT_EQ(c->header.clock_step_ns, -4'250'000'000);
  EXPECT_EQ(c->header.frames_lost_before, 20u);
  EXPECT_FALSE(full_q.pop(c));
}

}  // namespace
}  // namespace vigil
