// SigmfWriter: what it writes replays through FileSource sample for sample, with the same frame
// indices, times, loss flags and clock steps (each becomes a capture segment); a write error leaves a
// consistent, replayable recording of whole chunks.
#include "acquisition/sigmf_writer.hpp"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/clock.hpp"
#include "acquisition/file_source.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;

struct Written {
  ChunkHeader header;
  std::vector<int16_t> samples;
};

class SigmfWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-sigmfw-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A chunk of random int16 samples starting at `frame`, its time on the 48 kHz line from t0.
  Written chunk(uint64_t frame, uint32_t frames, uint32_t channels, int64_t t0) {
    Written w;
    w.header.first_frame = frame;
    w.header.frames = frames;
    w.header.channels = channels;
    w.header.format = SampleFormat::kInt16;
    w.header.t_first_utc_ns = t0 + frames_to_ns(frame, 48000);
    w.samples.resize(size_t(frames) * channels);
    for (int16_t& s : w.samples) s = int16_t(rng_());
    return w;
  }
  std::mt19937 rng_{std::random_device{}()};
  fs::path dir_;
};

TEST_F(SigmfWriterTest, GapsBecomeSegmentsThatReplayAsTheyWereLive) {
  const int64_t t0 = 1'795'000'000'123'456'789;  // 2026-11-18, with nanoseconds
  SigmfGlobal g{48000, 3, SampleFormat::kInt16, "ab12", "test source"};
  std::vector<Written> in;
  uint64_t frame = 5000;  // a recording that starts mid-run
  constexpr int64_t kStep = -2'500'000'000;  // the wall clock set 2.5 s back before chunk 10
  for (int k = 0; k < 12; ++k) {
    if (k == 4) frame += 777;  // frames lost (a dropped chunk and then some)
    in.push_back(chunk(frame, 256, 3, t0));
    if (k == 8) {                                   // the device overran: flagged, index continuous,
      in.back().header.frames_lost_before = 100;    // the time line moves on by the loss
      in.back().header.flags = chunk_flags::kOverrunBefore | chunk_flags::kSourceOverrun;
      in.back().header.t_first_utc_ns += frames_to_ns(100, 48000);
    }
    if (k == 10) {  // the clock stepped: no frame lost, the time line moved
      in.back().header.flags = chunk_flags::kClockStepped;
      in.back().header.clock_step_ns = kStep;
    }
    frame += 256;
  }
  // Chunks after k = 8 keep the shifted time line; from k = 10 on, the step too.
  for (size_t k = 9; k < in.size(); ++k) in[k].header.t_first_utc_ns += frames_to_ns(100, 48000);
  for (size_t k = 10; k < in.size(); ++k) in[k].header.t_first_utc_ns += kStep;
  {
    SigmfWriter w((dir_ / "rec").string(), g);
    for (const Written& c : in) ASSERT_EQ(w.append(c.header, c.samples.data()), 0);
    EXPECT_EQ(w.segments(), 4u);
    EXPECT_EQ(w.frames(), 12u * 256);
    ASSERT_EQ(w.close(), 0);
  }
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(dir_ / "rec.sigmf-meta"));
  EXPECT_EQ(meta["global"]["core:datatype"], "ri16_le");
  EXPECT_EQ(meta["global"]["core:num_channels"], 3);
  EXPECT_EQ(meta["global"]["vigil:config_sha256"], "ab12");
  ASSERT_EQ(meta["captures"].size(), 4u);
  EXPECT_EQ(meta["captures"][1]["core:sample_start"], 4 * 256);
  EXPECT_EQ(meta["captures"][1]["core:global_index"], 5000 + 4 * 256 + 777);
  EXPECT_EQ(meta["captures"][2]["vigil:source_overrun"], true);
  EXPECT_EQ(meta["captures"][3]["vigil:frames_lost_before"], 0);
  EXPECT_EQ(meta["captures"][3]["vigil:clock_step_s"], -2.5);
  EXPECT_EQ(fs::file_size(dir_ / "rec.sigmf-data"), 12u * 256 * 3 * 2);
  EXPECT_EQ(fs::status(dir_ / "rec.sigmf-data").permissions() & fs::perms::others_all, fs::perms::none);

  // Replay in chunks that do not divide the segments: no chunk spans a gap, indices, times and
  // flags are the live ones, every sample is there. Per frame of the file: its live index and time.
  std::vector<uint64_t> live_frame;
  std::vector<int64_t> live_utc;
  std::vector<int16_t> live_samples;
  for (const Written& w : in)
    for (uint32_t f = 0; f < w.header.frames; ++f) {
      live_frame.push_back(w.header.first_frame + f);
      live_utc.push_back(w.header.t_first_utc_ns + frames_to_ns(f, 48000));
      live_samples.insert(live_samples.end(), w.samples.begin() + f * 3, w.samples.begin() + f * 3 + 3);
    }
  FileSource src({(dir_ / "rec.sigmf-meta").string(), 100, 0, false});
  std::vector<std::byte> mem(100 * 3 * 4);
  Chunk c;
  c.data = mem.data();
  c.capacity_bytes = mem.size();
  size_t pos = 0;  // frame in the file
  while (src.read(c) == ReadStatus::kOk) {
    const ChunkHeader& h = c.header;
    ASSERT_LE(pos + h.frames, live_frame.size());
    EXPECT_EQ(h.first_frame, live_frame[pos]);
    EXPECT_LE(std::abs(h.t_first_utc_ns - live_utc[pos]), 1) << pos;
    for (size_t seg : {4u * 256, 8u * 256, 10u * 256})
      EXPECT_FALSE(pos < seg && pos + h.frames > seg) << "spans a gap at " << pos;
    const bool segment_start = pos == 4 * 256 || pos == 8 * 256;
    EXPECT_EQ(h.flags & chunk_flags::kOverrunBefore, segment_start ? chunk_flags::kOverrunBefore : 0u) << pos;
    EXPECT_EQ(h.frames_lost_before, pos == 4 * 256 ? 777u : pos == 8 * 256 ? 100u : 0u) << pos;
    EXPECT_EQ(bool(h.flags & chunk_flags::kSourceOverrun), pos == 8 * 256) << pos;
    EXPECT_EQ(bool(h.flags & chunk_flags::kClockStepped), pos == 10 * 256) << pos;
    EXPECT_EQ(h.clock_step_ns, pos == 10 * 256 ? kStep : 0) << pos;
    const auto* s = reinterpret_cast<const int16_t*>(c.data);
    for (uint32_t i = 0; i < h.frames * 3; ++i) ASSERT_EQ(s[i], live_samples[pos * 3 + i]) << pos;
    pos += h.frames;
  }
  EXPECT_EQ(pos, live_frame.size());
}

TEST_F(SigmfWriterTest, AWriteErrorKeepsWholeChunksAndAReadableRecording) {
  // A real kernel error: a file size limit makes write() fail with EFBIG mid-chunk.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  const int64_t t0 = 1'795'000'000'000'000'000;
  std::vector<Written> in;
  int err = 0;
  uint64_t frames = 0;
  {
    SigmfWriter w((dir_ / "cut").string(), {48000, 2, SampleFormat::kInt16, "", ""});
    rlimit lim = old;
    lim.rlim_cur = 10000;  // bytes: 9 chunks of 1024 bytes fit, the 10th does not
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (int k = 0; k < 20 && !err; ++k) {
      in.push_back(chunk(uint64_t(k) * 256, 256, 2, t0));
      err = w.append(in.back().header, in.back().samples.data());
    }
    setrlimit(RLIMIT_FSIZE, &old);
    frames = w.frames();
    EXPECT_EQ(w.close(), 0);
  }
  EXPECT_EQ(err, EFBIG);
  EXPECT_EQ(frames, 9u * 256);
  EXPECT_EQ(fs::file_size(dir_ / "cut.sigmf-data"), 9u * 1024);
  FileSource src({(dir_ / "cut.sigmf-data").string(), 256, 0, false});
  std::vector<std::byte> mem(256 * 2 * 2);
  Chunk c;
  c.data = mem.data();
  c.capacity_bytes = mem.size();
  for (size_t k = 0; k < 9; ++k) {
    ASSERT_EQ(src.read(c), ReadStatus::kOk);
    EXPECT_EQ(0, std::memcmp(c.data, in[k].samples.data(), 1024)) << k;
    EXPECT_EQ(c.header.t_first_utc_ns, in[k].header.t_first_utc_ns);
  }
  EXPECT_EQ(src.read(c), ReadStatus::kEnd);
}

TEST_F(SigmfWriterTest, RefusesToOverwriteARecording) {
  std::ofstream(dir_ / "old.sigmf-data") << "keep";
  EXPECT_THROW(SigmfWriter((dir_ / "old").string(), {48000, 1, SampleFormat::kInt16, "", ""}), std::runtime_error);
  EXPECT_EQ(fs::file_size(dir_ / "old.sigmf-data"), 4u);
}

}  // namespace
}  // namespace vigil
