// Recorder (`record:`): rotation by size, by duration and on a config change; the total cap
// (delete the oldest, or stop); chunks dropped while the disk is behind become a gap the replay
// reproduces; a write error stops the recording with an event while offers go on. Every
// recording is replayed through FileSource and compared sample for sample with what was offered.
#include "pipeline/recorder.hpp"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "core/clock.hpp"
#include "acquisition/file_source.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint32_t kFrames = 512, kChannels = 2;
constexpr size_t kChunkBytes = kFrames * kChannels * 2;
constexpr double kRate = 51200;
constexpr int64_t kT0 = 1'795'000'000'000'000'000;

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-recorder-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    settings_.enabled = true;
    settings_.directory = dir_.string();
    settings_.prefix = "rig";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Recorder> make(const std::string& sha = "cafe") {
    SourceFormat f{kRate, kChannels, SampleFormat::kInt16, kFrames, 1.0f / 32768};
    return std::make_unique<Recorder>(settings_, f, sha, "test", [this](const std::string& type, json body) {
      const std::lock_guard<std::mutex> lock(mu_);
      body["type"] = type;
      events_.push_back(std::move(body));
    });
  }
  // Chunk k of the input: random samples, kept for the comparison.
  Chunk& chunk(uint64_t k) {
    std::vector<int16_t>& s = input_[k];
    s.resize(kFrames * kChannels);
    for (int16_t& v : s) v = int16_t(rng_());
    c_.data = reinterpret_cast<std::byte*>(s.data());
    c_.capacity_bytes = kChunkBytes;
    c_.header = ChunkHeader{};
    c_.header.first_frame = k * kFrames;
    c_.header.frames = kFrames;
    c_.header.channels = kChannels;
    c_.header.format = SampleFormat::kInt16;
    c_.header.t_first_utc_ns = kT0 + frames_to_ns(k * kFrames, kRate);
    return c_;
  }
  void offer(Recorder& r, uint64_t k) {
    r.offer(chunk(k));
    ++offered_;
  }
  // Waits until every chunk offered so far is written or dropped (or the recording stopped).
  void settle(Recorder& r) {
    for (;;) {
      const json st = r.status_json();
      if (st["state"] == "stopped" ||
          st["chunks_written"].get<uint64_t>() + st["chunks_dropped"].get<uint64_t>() >= offered_)
        return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  // Offers chunks [from, to) while the recorder thread runs, each after the one before is on
  // disk: these tests are about rotation and errors, not drops.
  void record(Recorder& r, uint64_t from, uint64_t to) {
    std::atomic<bool> done{false};
    std::thread t([&] { r.run([&] { return done.load(std::memory_order_acquire); }); });
    settle(r);
    for (uint64_t k = from; k < to; ++k) {
      offer(r, k);
      settle(r);
    }
    done.store(true, std::memory_order_release);
    t.join();
  }
  std::vector<std::string> recordings() const {  // data files, oldest name first
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().extension() == ".sigmf-data") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Replays one recording; checks every sample, index and time against the input. Returns the
  // chunk indices it held.
  std::vector<uint64_t> replay_and_check(const std::string& path) {
    FileSource src({path, kFrames, 0, false});
    std::vector<std::byte> mem(kChunkBytes * 2);
    Chunk c;
    c.data = mem.data();
    c.capacity_bytes = mem.size();
    std::vector<uint64_t> held;
    while (src.read(c) == ReadStatus::kOk) {
      EXPECT_EQ(c.header.first_frame % kFrames, 0u);
      const uint64_t k = c.header.first_frame / kFrames;
      EXPECT_EQ(c.header.frames, kFrames);
      EXPECT_LE(std::abs(c.header.t_first_utc_ns - (kT0 + frames_to_ns(k * kFrames, kRate))), 1);
      EXPECT_EQ(0, std::memcmp(c.data, input_.at(k).data(), kChunkBytes)) << path << " chunk " << k;
      held.push_back(k);
    }
    return held;
  }
  std::vector<json> events(const std::string& action) {
    std::vector<json> out;
    for (const json& e : events_)
      if (e["action"] == action) out.push_back(e);
    return out;
  }

  RecordSettings settings_;
  fs::path dir_;
  std::mt19937 rng_{std::random_device{}()};
  std::map<uint64_t, std::vector<int16_t>> input_;
  Chunk c_;
  std::mutex mu_;
  std::vector<json> events_;
  uint64_t offered_ = 0;
};

TEST_F(RecorderTest, RotatesBySizeAndKeepsUnderTheTotalCapByDeletingTheOldest) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "other-20200101T000000Z-0000.sigmf-data") << std::string(50000, 'x');  // not ours
  std::ofstream(dir_ / "rig-20200101T000000Z-0000.sigmf-data") << std::string(3000, 'x');     // ours, oldest
  fs::last_write_time(dir_ / "rig-20200101T000000Z-0000.sigmf-data", fs::file_time_type::clock::now() - std::chrono::hours(24));
  settings_.max_file_mib = 5.0 * kChunkBytes / 1048576;   // 5 chunks a file
  settings_.max_file_s = 0;
  settings_.max_total_mib = 36000.0 / 1048576;            // about 3 files with their metadata
  auto r = make();
  record(*r, 0, 40);
  const json st = r->status_json();
  EXPECT_EQ(st["chunks_written"], 40);
  EXPECT_EQ(st["chunks_dropped"], 0);
  EXPECT_EQ(st["files_written"], 8);
  EXPECT_EQ(st["state"], "recording");
  EXPECT_TRUE(fs::exists(dir_ / "other-20200101T000000Z-0000.sigmf-data"));
  EXPECT_FALSE(fs::exists(dir_ / "rig-20200101T000000Z-0000.sigmf-data"));  // went first
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().filename().string().rfind("rig-", 0) == 0) total += fs::file_size(e.path());
  EXPECT_LE(total, uint64_t(settings_.max_total_mib * 1048576));
  const std::vector<std::string> left = recordings();
  ASSERT_EQ(left.size(), 4u);  // 3 of ours and the other prefix's
  EXPECT_EQ(st["files_deleted"], 6);  // the old one and 5 of the 8 written
  EXPECT_EQ(events("delete").size(), 6u);
  EXPECT_EQ(events("open").size(), 8u);
  // What is left is the last 15 chunks, 5 a file, in order.
  std::vector<uint64_t> held;
  for (const std::string& p : left) {
    if (p.find("/rig-") == std::string::npos) continue;
    EXPECT_LE(fs::file_size(p), 5 * kChunkBytes);
    const auto h = replay_and_check(p);
    held.insert(held.end(), h.begin(), h.end());
  }
  std::vector<uint64_t> want(15);
  std::iota(want.begin(), want.end(), 25);
  EXPECT_EQ(held, want);
  const json meta = json::parse(std::ifstream(left.back().substr(0, left.back().size() - 4) + "meta"));
  EXPECT_EQ(meta["global"]["vigil:config_sha256"], "cafe");
  EXPECT_EQ(meta["global"]["core:sample_rate"], kRate);
}

TEST_F(RecorderTest, RotatesByDurationAndOnAConfigChange) {
  settings_.max_file_s = 7 * kFrames / kRate;  // 7 chunks of signal a file
  auto r = make("one");
  std::atomic<bool> done{false};
  std::thread t([&] { r->run([&] { return done.load(std::memory_order_acquire); }); });
  auto wait_written = [&](uint64_t n) {
    while (r->status_json()["chunks_written"].get<uint64_t>() < n) std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  for (uint64_t k = 0; k < 10; ++k) offer(*r, k), wait_written(k + 1);
  r->rotate_for_config("two");  // a reload: the next chunk starts a file with the new hash
  for (uint64_t k = 10; k < 12; ++k) offer(*r, k), wait_written(k + 1);
  done = true;
  t.join();
  const std::vector<std::string> files = recordings();
  ASSERT_EQ(files.size(), 3u);
  std::vector<std::vector<uint64_t>> held;
  std::vector<std::string> sha;
  for (const std::string& p : files) {
    held.push_back(replay_and_check(p));
    sha.push_back(json::parse(std::ifstream(p.substr(0, p.size() - 4) + "meta"))["global"]["vigil:config_sha256"]);
  }
  // Names sort by start time only to the second, so order the files by their first chunk.
  std::vector<size_t> order = {0, 1, 2};
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return held[a][0] < held[b][0]; });
  EXPECT_EQ(held[order[0]].size(), 7u);
  EXPECT_EQ(held[order[1]], (std::vector<uint64_t>{7, 8, 9}));
  EXPECT_EQ(held[order[2]], (std::vector<uint64_t>{10, 11}));
  EXPECT_EQ(sha[order[1]], "one");
  EXPECT_EQ(sha[order[2]], "two");
  const auto closes = events("close");
  ASSERT_EQ(closes.size(), 3u);
  EXPECT_EQ(closes[0]["reason"], "duration");
  EXPECT_EQ(closes[1]["reason"], "config");
  EXPECT_EQ(closes[2]["reason"], "end");
}

TEST_F(RecorderTest, WhenFullStopStopsWithAnEventAndOffersGoOn) {
  settings_.max_file_mib = 4.0 * kChunkBytes / 1048576;
  settings_.max_total_mib = 10.0 * kChunkBytes / 1048576;
  settings_.when_full = "stop";
  auto r = make();
  record(*r, 0, 30);
  const json st = r->status_json();
  EXPECT_EQ(st["state"], "stopped");
  EXPECT_NE(st["reason"].get<std::string>().find("max_total_mib"), std::string::npos) << st.dump();
  EXPECT_EQ(events("stop").size(), 1u);
  EXPECT_EQ(st["files_deleted"], 0);
  uint64_t kept = 0;
  for (const std::string& p : recordings()) kept += replay_and_check(p).size();
  EXPECT_EQ(kept, st["chunks_written"].get<uint64_t>());
  EXPECT_GE(kept, 8u);  // whole chunks up to the cap, metadata included
  EXPECT_LE(kept, 9u);
}

TEST_F(RecorderTest, ChunksDroppedWhileTheDiskIsBehindBecomeAGapTheReplayReproduces) {
  settings_.buffer_chunks = 2;
  auto r = make();
  for (uint64_t k = 0; k < 10; ++k) offer(*r, k);  // no recorder thread yet: 2 kept, 8 dropped
  EXPECT_EQ(r->status_json()["chunks_dropped"], 8);
  EXPECT_EQ(r->status_json()["frames_dropped"], 8 * kFrames);
  record(*r, 10, 13);
  FileSource src({recordings().at(0), kFrames, 0, false});
  std::vector<std::byte> mem(kChunkBytes);
  Chunk c;
  c.data = mem.data();
  c.capacity_bytes = mem.size();
  std::vector<uint64_t> frames;
  while (src.read(c) == ReadStatus::kOk) {
    frames.push_back(c.header.first_frame);
    EXPECT_EQ(bool(c.header.flags & chunk_flags::kOverrunBefore), c.header.first_frame == 10 * kFrames);
    if (c.header.first_frame == 10 * kFrames) {
      EXPECT_EQ(c.header.frames_lost_before, 8 * kFrames);
    }
    EXPECT_EQ(0, std::memcmp(c.data, input_.at(c.header.first_frame / kFrames).data(), kChunkBytes));
  }
  EXPECT_EQ(frames, (std::vector<uint64_t>{0, kFrames, 10 * kFrames, 11 * kFrames, 12 * kFrames}));
}

TEST_F(RecorderTest, AWriteErrorStopsTheRecordingWithAnEvent) {
  std::signal(SIGXFSZ, SIG_IGN);  // as vigild does: EFBIG instead of a signal
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit lim = old;
  lim.rlim_cur = 6 * kChunkBytes + 100;
  auto r = make();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  record(*r, 0, 20);
  setrlimit(RLIMIT_FSIZE, &old);
  const json st = r->status_json();
  EXPECT_EQ(st["state"], "stopped");
  EXPECT_EQ(st["write_errors"], 1);
  EXPECT_EQ(st["chunks_written"], 6);
  EXPECT_NE(st["reason"].get<std::string>().find("File too large"), std::string::npos) << st.dump();
  ASSERT_EQ(events("stop").size(), 1u);
  EXPECT_EQ(replay_and_check(recordings().at(0)).size(), 6u);  // whole chunks, readable
}

}  // namespace
}  // namespace vigil
