// CaptureProgress: a reader sees the frames published for the chunk it names and nothing stale, and
// a paced synthetic source publishes a large chunk in parts at their times, with the same samples
// it delivers whole.
#include "acquisition/capture_progress.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "acquisition/capture_loop.hpp"
#include "acquisition/chunk_pool.hpp"
#include "core/clock.hpp"
#include "acquisition/synthetic_source.hpp"

namespace vigil {
namespace {

TEST(CaptureProgress, ASnapshotNamesTheChunkItsGenerationAndItsCompleteFrames) {
  CaptureProgress p;
  CaptureProgress::Snapshot s;
  EXPECT_FALSE(p.snapshot(s)) << "nothing begun";
  Chunk a, b;
  p.begin(&a);
  ASSERT_TRUE(p.snapshot(s));
  EXPECT_EQ(s.chunk, &a);
  EXPECT_EQ(s.frames, 0u);
  const uint64_t g = s.generation;
  EXPECT_EQ(g, p.generation());
  p.publish(100);
  p.publish(250);
  ASSERT_TRUE(p.snapshot(s));
  EXPECT_EQ(s.frames, 250u);
  EXPECT_EQ(s.generation, g);
  p.restart();  // an overrun: the same chunk from its first frame again
  ASSERT_TRUE(p.snapshot(s));
  EXPECT_EQ(s.chunk, &a);
  EXPECT_EQ(s.frames, 0u);
  EXPECT_GT(s.generation, g);
  p.begin(&b);
  ASSERT_TRUE(p.snapshot(s));
  EXPECT_EQ(s.chunk, &b);
  EXPECT_EQ(s.frames, 0u);
  p.begin(nullptr);  // read into memory nobody gets: nothing to follow, nothing published
  p.publish(10);
  EXPECT_FALSE(p.snapshot(s));
}

// One thread fills chunks a part at a time, each frame stamped with its chunk's generation, and
// publishes; another takes snapshots as fast as it can. Every frame a snapshot says is complete
// carries that snapshot's generation (run under TSan in CI: the samples are plain memory).
TEST(CaptureProgress, AReaderNeverSeesAFrameOfAnotherChunkAsComplete) {
  constexpr uint32_t kFrames = 4096, kParts = 64, kChunks = 400;
  ChunkPool pool(2, kFrames * sizeof(uint64_t));
  CaptureProgress p;
  std::atomic<bool> done{false}, reading{false};
  std::thread writer([&] {
    while (!reading.load()) std::this_thread::yield();
    for (uint32_t k = 0; k < kChunks; ++k) {
      Chunk& c = pool.chunk(k % 2);  // the same memory over and over, as a pool's
      p.begin(&c);
      const uint64_t g = p.generation();
      auto* v = reinterpret_cast<uint64_t*>(c.data);
      for (uint32_t part = 0; part < kParts; ++part) {
        const uint32_t end = (part + 1) * (kFrames / kParts);
        // (Relaxed atomics: a reader may still be looking at frames a later chunk overwrites,
        // which it then discards, as the pipeline's copy would be.)
        for (uint32_t i = part * (kFrames / kParts); i < end; ++i) __atomic_store_n(&v[i], g, __ATOMIC_RELAXED);
        p.publish(end);
        std::this_thread::yield();  // give the reader its turns on a machine of few cores
        if (k % 7 == 3 && part == kParts / 2) {  // an overrun half-way: the chunk starts over
          p.restart();
          break;
        }
      }
    }
    done.store(true);
  });
  uint64_t snapshots = 0, partial = 0, checked = 0;
  reading.store(true);
  while (!done.load()) {
    CaptureProgress::Snapshot s;
    if (!p.snapshot(s)) continue;
    ++snapshots;
    if (s.frames > 0 && s.frames < kFrames) ++partial;
    const auto* v = reinterpret_cast<const uint64_t*>(s.chunk->data);
    // Frames [0, frames) are this generation's, unless the writer has moved on since (a later
    // generation, which a reader following generations discards): never an earlier one.
    for (uint32_t i = 0; i < s.frames; ++i) {
      const uint64_t got = __atomic_load_n(&v[i], __ATOMIC_RELAXED);
      ASSERT_GE(got, s.generation) << "frame " << i << " of generation " << s.generation;
      ++checked;
    }
  }
  writer.join();
  EXPECT_GT(snapshots, 0u);
  EXPECT_GT(checked, 0u);
  RecordProperty("partial_snapshots", std::to_string(partial));
}

SyntheticSpec rig(double rate_factor, double loop_s) {
  SyntheticSpec s;
  s.rate_hz = 1e6;
  s.channels = 16;
  s.format = SampleFormat::kInt16;
  s.chunk_frames = 65536;  // 16 x 65536 int16: 2 MiB, 4 parts of 512 KiB
  s.rate_factor = rate_factor;
  s.loop_s = loop_s;
  s.duration_s = 3 * 65536 / 1e6;
  s.seed = 5;
  s.signals.resize(1);
  s.signals[0].noise_rms = 0.1;
  s.signals[0].bursts.amplitude = 0.3;
  s.signals[0].bursts.freq_hz = 20000;
  s.signals[0].bursts.rise_s = 1e-5;
  s.signals[0].bursts.decay_s = 1e-4;
  s.signals[0].bursts.rate_hz = 200;
  return s;
}

TEST(SyntheticSource, PartsComeFromSizeTimeAndProgress) {
  CaptureProgress p;
  SyntheticSource paced(rig(2, 0));
  EXPECT_EQ(paced.parts_of(65536), 1u) << "no progress to publish";
  paced.set_progress(&p);
  EXPECT_EQ(paced.parts_of(65536), 4u);   // 2 MiB in 512 KiB parts; 32.8 ms of signal at 2x
  EXPECT_EQ(paced.parts_of(16384), 1u);   // 512 KiB: one part
  SyntheticSpec fast = rig(2000, 0);      // 32.8 us a chunk: parts of 200 us cannot be
  SyntheticSource quick(fast);
  quick.set_progress(&p);
  EXPECT_EQ(quick.parts_of(65536), 1u);
  SyntheticSpec wide = rig(1, 0);
  wide.channels = 512;                    // 64 MiB a chunk: at most 16 parts
  SyntheticSource big(wide);
  big.set_progress(&p);
  EXPECT_EQ(big.parts_of(65536), 16u);
  SyntheticSource unpaced(rig(0, 0));
  unpaced.set_progress(&p);
  EXPECT_EQ(unpaced.parts_of(65536), 1u);
}

// Paced with progress: each chunk's parts are published in order at their frames' times (never
// before), the frames published are final, and the chunks are the very samples the same source
// gives unpaced and whole, generated or from its loop.
void check_parts_published(double loop_s) {
  const SyntheticSpec spec = rig(2, loop_s);
  SyntheticSource whole(rig(0, loop_s)), parts(spec);
  CaptureProgress p;
  parts.set_progress(&p);
  ChunkPool pool(2, 65536 * 16 * 2);
  const size_t frame_bytes = 16 * 2;
  struct Seen {
    uint64_t generation;
    uint32_t frames;
    int64_t t_ns;
    std::vector<std::byte> prefix;  // the published frames as read at that moment (first sight only)
  };
  std::vector<Seen> seen;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t last_gen = 0;
    uint32_t last_frames = 0;
    while (!done.load()) {
      CaptureProgress::Snapshot s;
      if (!p.snapshot(s) || (s.generation == last_gen && s.frames == last_frames)) continue;
      Seen x{s.generation, s.frames, mono_now_ns(), {}};
      if (s.generation != last_gen && s.frames > 0 && s.frames < 65536)
        x.prefix.assign(s.chunk->data, s.chunk->data + size_t(s.frames) * frame_bytes);
      seen.push_back(std::move(x));
      last_gen = s.generation;
      last_frames = s.frames;
    }
  });
  std::vector<std::vector<std::byte>> got;
  std::vector<uint64_t> generations;
  const int64_t t0 = mono_now_ns();
  for (int k = 0; k < 3; ++k) {
    Chunk& c = pool.chunk(k % 2);
    p.begin(&c);
    generations.push_back(p.generation());
    ASSERT_EQ(parts.read(c), ReadStatus::kOk);
    got.emplace_back(c.data, c.data + size_t(c.header.frames) * frame_bytes);
  }
  done.store(true);
  reader.join();
  for (int k = 0; k < 3; ++k) {
    Chunk& c = pool.chunk(0);
    ASSERT_EQ(whole.read(c), ReadStatus::kOk);
    ASSERT_EQ(c.header.frames, 65536u);
    ASSERT_EQ(std::memcmp(c.data, got[size_t(k)].data(), got[size_t(k)].size()), 0) << "chunk " << k;
  }
  uint32_t intermediate = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    const Seen& x = seen[i];
    int k = -1;
    for (int j = 0; j < 3; ++j)
      if (generations[size_t(j)] == x.generation) k = j;
    if (k < 0 || x.frames == 0) continue;
    EXPECT_EQ(x.frames % 16384, 0u) << "a part ends every 16384 frames";
    if (i > 0 && seen[i - 1].generation == x.generation) {
      EXPECT_GT(x.frames, seen[i - 1].frames);
    }
    // Never ahead of its frames' time: frame f of chunk k is due (k * 65536 + f) us / 2 in.
    const int64_t due = t0 + int64_t((double(k) * 65536 + x.frames) * 1e3 / 2);
    EXPECT_GE(x.t_ns, due - 2'000'000) << "published before its time (2 ms for the start's offset)";
    if (x.frames < 65536) ++intermediate;
    if (!x.prefix.empty()) {
      EXPECT_EQ(std::memcmp(x.prefix.data(), got[size_t(k)].data(), x.prefix.size()), 0)
          << "published frames changed afterwards (chunk " << k << ")";
    }
  }
  EXPECT_GT(intermediate, 0u) << "no part was seen before its chunk was complete";
}

TEST(SyntheticSource, APacedChunkIsPublishedInPartsWithTheSameSamplesGenerated) { check_parts_published(0); }
TEST(SyntheticSource, APacedChunkIsPublishedInPartsWithTheSameSamplesFromItsLoop) { check_parts_published(0.1); }

// The capture loop stamps each pool chunk with the generation it was read under, and publishes
// nothing for a chunk it has to drop.
TEST(CaptureLoop, TrackedChunksCarryTheirGeneration) {
  SyntheticSpec s = rig(20, 0);
  s.channels = 2;
  s.duration_s = 10 * 65536 / 1e6;
  SyntheticSource source(s);
  ChunkPool pool(4, 65536 * 2 * 2);
  SpscQueue<Chunk*> free_q(4), full_q(4);
  for (uint32_t i = 0; i < 4; ++i) free_q.push(&pool.chunk(i));
  CaptureLoop loop(source, free_q, full_q, pool.bytes_per_chunk());
  loop.track_progress();
  loop.run();
  std::vector<uint64_t> gens;
  Chunk* c = nullptr;
  while (full_q.pop(c)) gens.push_back(c->capture_generation);
  ASSERT_EQ(gens.size(), 4u);  // nobody consumed: 4 handed over, the rest dropped
  for (size_t i = 1; i < gens.size(); ++i) EXPECT_EQ(gens[i], gens[i - 1] + 1);
  EXPECT_GT(gens[0], 0u);
  CaptureProgress::Snapshot snap;
  EXPECT_FALSE(loop.progress().snapshot(snap)) << "the last read was into the scratch chunk: nothing to follow";
}

}  // namespace
}  // namespace vigil
