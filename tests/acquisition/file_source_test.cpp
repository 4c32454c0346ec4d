// Replaying WAV and SigMF recordings: every sample in order and in its channel, chunking, end of
// file, looping, the SigMF start time, and clear errors for files it cannot use.
#include "acquisition/file_source.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "acquisition/chunk_pool.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-file-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A PCM WAV of `channels` x `frames`; sample (f, c) = value(f, c), `bits` 16 or 24.
  std::string write_wav(int channels, int frames, int bits, int (*value)(int, int), uint32_t rate = 8000) {
    // Appended: "x" + std::to_string(...) draws a false -Wrestrict warning from GCC 12 at -O2.
    const std::string p = (dir_ / std::string("x").append(std::to_string(bits)).append(".wav")).string();
    std::ofstream f(p, std::ios::binary);
    auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
    const uint32_t bytes = uint32_t(frames * channels * bits / 8);
    f.write("RIFF", 4);
    u32(36 + bytes);
    f.write("WAVEfmt ", 8);
    u32(16);
    u16(1);
    u16(uint16_t(channels));
    u32(rate);
    u32(rate * uint32_t(channels * bits / 8));
    u16(uint16_t(channels * bits / 8));
    u16(uint16_t(bits));
    f.write("data", 4);
    u32(bytes);
    for (int i = 0; i < frames; ++i)
      for (int c = 0; c < channels; ++c) {
        const int v = value(i, c);
        f.write(reinterpret_cast<const char*>(&v), bits / 8);  // little-endian low bytes
      }
    return p;
  }
  fs::path dir_;
};

int ramp(int f, int c) { return f * 10 + c; }
int ramp24(int f, int c) { return (f * 1000 + c) - 4'000'000; }

TEST_F(FileSourceTest, WavSamplesArriveInOrderInTheirChannels) {
  const std::string p = write_wav(2, 100, 16, ramp);
  FileSource src({p, 7, 0.0, false});
  EXPECT_EQ(src.format().channels, 2u);
  EXPECT_EQ(src.format().rate_hz, 8000.0);
  EXPECT_EQ(src.format().format, SampleFormat::kInt16);
  ChunkPool pool(2, 7 * 2 * 2);
  Chunk& c = pool.chunk(0);
  int seen = 0;
  while (src.read(c) == ReadStatus::kOk) {
    EXPECT_EQ(c.header.first_frame, uint64_t(seen));
    const auto* d = reinterpret_cast<const int16_t*>(c.data);
    for (uint32_t i = 0; i < c.header.frames; ++i)
      for (int ch = 0; ch < 2; ++ch) ASSERT_EQ(d[i * 2 + ch], ramp(seen + int(i), ch));
    seen += int(c.header.frames);
  }
  EXPECT_EQ(seen, 100);  // 14 chunks of 7 and one of 2
  EXPECT_EQ(src.read(c), ReadStatus::kEnd);
}

// Replayed at its rate (chunks of 80 frames at 8 kHz: one period P = 10 ms), chunk k is due at
// start + (k+1)P and counted late where it is read more than a period past that. A reader that
// pauses 45 ms after the first chunk finds chunks 1 to 3 late (about 35, 25 and 15 ms past due):
// at least those are counted. How many more depends on how long this machine stalled the test, so
// each read is timed: a chunk read wholly after start + (k+2)P must be counted, one read wholly
// before it must not, and only those in between may go either way.
TEST_F(FileSourceTest, ChunksReplayedMoreThanAPeriodLateAreCounted) {
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC, the pace's clock
  constexpr auto kPeriod = std::chrono::milliseconds(10);
  const std::string p = write_wav(1, 800, 16, ramp);
  FileSource src({p, 80, 1.0, false});
  ChunkPool pool(2, 80 * 2);
  Chunk& c = pool.chunk(0);
  const Clock::time_point first_before = Clock::now();
  ASSERT_EQ(src.read(c), ReadStatus::kOk);  // starts the pace, returns when chunk 0 is due
  const Clock::time_point first_after = Clock::now();
  EXPECT_EQ(src.late_chunks(), 0u);
  const Clock::time_point start_earliest = first_before;
  const Clock::time_point start_latest = first_after - kPeriod;
  std::this_thread::sleep_for(std::chrono::milliseconds(45));
  int chunks = 1;
  uint64_t must_be_late = 0;
  uint64_t may_be_late = 0;
  for (;;) {
    const int k = chunks;
    const Clock::time_point before = Clock::now();
    const ReadStatus status = src.read(c);
    const Clock::time_point after = Clock::now();
    if (status != ReadStatus::kOk) break;
    ++chunks;
    const auto late_after = (k + 2) * kPeriod;  // past due by more than a period from here on
    if (before > start_latest + late_after) ++must_be_late;
    else if (after > start_earliest + late_after) ++may_be_late;
  }
  EXPECT_EQ(chunks, 10);
  EXPECT_GE(must_be_late, 3u);  // the 45 ms pause alone makes chunks 1 to 3 late
  EXPECT_GE(src.late_chunks(), must_be_late);
  EXPECT_LE(src.late_chunks(), must_be_late + may_be_late);
}

TEST_F(FileSourceTest, Wav24BitIsWidenedToInt32) {
  const std::string p = write_wav(1, 50, 24, ramp24);
  FileSource src({p, 64, 0.0, false});
  EXPECT_EQ(src.format().format, SampleFormat::kInt32);
  ChunkPool pool(2, 64 * 4);
  ASSERT_EQ(src.read(pool.chunk(0)), ReadStatus::kOk);
  const auto* d = reinterpret_cast<const int32_t*>(pool.chunk(0).data);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(d[i], ramp24(i, 0) * 256) << i;  // full scale kept
}

// Found by trying bad input: a WAV whose header claims more than the file holds, and a SigMF
// data file ending in a partial frame, replayed what they had and said nothing.
TEST_F(FileSourceTest, ARecordingCutShortSaysWhatItHoldsAndWhatIsMissing) {
  const std::string p = write_wav(2, 300, 16, ramp);
  const uintmax_t whole = fs::file_size(p);
  fs::resize_file(p, whole - 2 * 2 * 100 - 3);  // 100 frames and 3 bytes of the 200th go
  FileSource src({p, 64, 0.0, false});
  ASSERT_EQ(src.info().cuts.size(), 2u);
  EXPECT_EQ(src.info().cuts[0], p + ": the header declares 300 frames (1200 bytes of data), the file holds 199: the "
                                    "last 101 are missing");
  EXPECT_EQ(src.info().cuts[1], p + ": the data ends in a partial frame: 1 of its 4 bytes after frame 199 are left "
                                    "out (the file holds 199 whole frames)");
  ChunkPool pool(2, 64 * 4);
  uint64_t frames = 0;
  for (ReadStatus st; (st = src.read(pool.chunk(0))) == ReadStatus::kOk;) {
    const auto* d = reinterpret_cast<const int16_t*>(pool.chunk(0).data);
    for (uint32_t i = 0; i < pool.chunk(0).header.frames; ++i)
      ASSERT_EQ(d[2 * i + 1], ramp(int(frames + i), 1)) << frames + i;
    frames += pool.chunk(0).header.frames;
  }
  EXPECT_EQ(frames, 199u);  // every whole frame it holds, no more

  const std::string base = (dir_ / "part").string();
  std::ofstream(base + ".sigmf-meta")
      << R"({"global": {"core:datatype": "ri32_le", "core:sample_rate": 1000, "core:num_channels": 3}})";
  std::ofstream(base + ".sigmf-data") << std::string(12 * 40 + 7, '\1');
  const RecordingInfo info = probe_recording(base + ".sigmf-meta");
  EXPECT_EQ(info.frames, 40u);
  ASSERT_EQ(info.cuts.size(), 1u);
  EXPECT_EQ(info.cuts[0], base + ".sigmf-data: the data ends in a partial frame: 7 of its 12 bytes after frame 40 are "
                                 "left out (the file holds 40 whole frames)");
  // A whole recording says nothing.
  EXPECT_TRUE(probe_recording(write_wav(2, 10, 24, ramp24)).cuts.empty());
}

TEST_F(FileSourceTest, SigmfFloatWithStartTimeAndLoop) {
  const std::string base = (dir_ / "rec").string();
  std::ofstream(base + ".sigmf-meta") << R"({"global": {"core:datatype": "rf32_le", "core:sample_rate": 1000,
      "core:num_channels": 3, "core:version": "1.0.0"},
    "captures": [{"core:sample_start": 0, "core:datetime": "2026-11-21T12:00:00.5Z"}], "annotations": []})";
  {
    std::ofstream d(base + ".sigmf-data", std::ios::binary);
    for (int i = 0; i < 30; ++i) {
      const float v = float(i);
      d.write(reinterpret_cast<const char*>(&v), 4);
    }
  }
  FileSource src({base + ".sigmf-meta", 4, 0.0, true});
  EXPECT_EQ(src.info().frames, 10u);
  ChunkPool pool(2, 4 * 3 * 4);
  Chunk& c = pool.chunk(0);
  std::vector<float> got;
  std::vector<uint64_t> firsts;
  for (int k = 0; k < 6; ++k) {  // 10 frames, looped: chunks of 4, 4, 2, 4, 4, 2
    ASSERT_EQ(src.read(c), ReadStatus::kOk);
    firsts.push_back(c.header.first_frame);
    // 2026-11-21T12:00:00Z is 1795262400 s after the epoch; the capture starts half a second later.
    if (k == 0) {
      EXPECT_EQ(c.header.t_first_utc_ns, 1'795'262'400'500'000'000);
    }
    if (k == 1) {
      EXPECT_EQ(c.header.t_first_utc_ns, 1'795'262'400'504'000'000);  // + 4 frames at 1 kHz
    }
    const auto* d = reinterpret_cast<const float*>(c.data);
    got.insert(got.end(), d, d + c.header.frames * 3);
  }
  EXPECT_EQ(firsts, (std::vector<uint64_t>{0, 4, 8, 10, 14, 18}));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], float(i % 30)) << i;
}

// A `record:` folder replays as one recording, file after file: every sample once and in order, the
// frame count and time line continuous across a rotation, a capture gap inside a file replayed as
// live, and a later run (its frame count from 0 again) after the frames its start time says were
// not recorded, flagged as lost. Chunks never span two files.
TEST_F(FileSourceTest, AFolderOfSigmfRecordingsReplaysAsOne) {
  const fs::path folder = dir_ / "rec";
  fs::create_directory(folder);
  int next = 0;  // sample values: 0, 1, 2, ... across the files in order
  auto write = [&](const std::string& name, int frames, const std::string& captures) {
    std::ofstream(folder / (name + ".sigmf-meta"))
        << R"({"global": {"core:datatype": "ri16_le", "core:sample_rate": 1000, "core:num_channels": 2},
            "captures": )" << captures << "}";
    std::ofstream d(folder / (name + ".sigmf-data"), std::ios::binary);
    for (int i = 0; i < frames * 2; ++i) {
      const auto v = int16_t(next++);
      d.write(reinterpret_cast<const char*>(&v), 2);
    }
  };
  // Run 1: 30 frames from 12:00:00, rotated into a second file of 25 frames whose frames 10.. follow a
  // gap of 5 lost frames; an empty file (a run stopped at once); run 2 starts 1 s after run 1's
  // first frame: 60 frames, from frame 0 of its own count.
  write("v-20261128T120000Z-0000", 30, R"([{"core:sample_start": 0, "core:global_index": 0,
      "core:datetime": "2026-11-28T12:00:00Z"}])");
  write("v-20261128T120000Z-0001", 25, R"([{"core:sample_start": 0, "core:global_index": 30,
      "core:datetime": "2026-11-28T12:00:00.030Z"}, {"core:sample_start": 10, "core:global_index": 45,
      "core:datetime": "2026-11-28T12:00:00.045Z", "vigil:frames_lost_before": 5}])");
  write("v-20261128T120000Z-0002", 0, R"([{"core:sample_start": 0, "core:global_index": 60}])");
  write("v-20261128T120001Z-0000", 60, R"([{"core:sample_start": 0, "core:global_index": 0,
      "core:datetime": "2026-11-28T12:00:01Z"}])");
  FileSource src({folder.string(), 8, 0.0, false});
  EXPECT_EQ(src.info().frames, 115u);
  EXPECT_EQ(src.info().parts.size(), 3u);
  ChunkPool pool(2, 8 * 2 * 2);
  Chunk& c = pool.chunk(0);
  std::vector<uint64_t> firsts, lost;
  std::vector<int64_t> times;
  int seen = 0;
  while (src.read(c) == ReadStatus::kOk) {
    firsts.push_back(c.header.first_frame);
    lost.push_back(c.header.frames_lost_before);
    times.push_back(c.header.t_first_utc_ns);
    const auto* d = reinterpret_cast<const int16_t*>(c.data);
    for (uint32_t i = 0; i < c.header.frames * 2; ++i) ASSERT_EQ(d[i], seen++) << "chunk " << firsts.size();
  }
  EXPECT_EQ(seen, 115 * 2);
  // Chunks of 8 that end at each file and segment: file 1 (30 frames) 0..29; file 2 from 30, its
  // gap after 10 frames (5 lost: 45..59); run 2 at 1 s = frame 1000 of run 1's count.
  EXPECT_EQ(firsts, (std::vector<uint64_t>{0, 8, 16, 24, 30, 38, 45, 53, 1000, 1008, 1016, 1024, 1032, 1040, 1048,
                                           1056}));
  EXPECT_EQ(lost, (std::vector<uint64_t>{0, 0, 0, 0, 0, 0, 5, 0, 940, 0, 0, 0, 0, 0, 0, 0}));
  const int64_t t0 = 1'795'867'200'000'000'000;  // 2026-11-28T12:00:00Z
  EXPECT_EQ(times[0], t0);
  EXPECT_EQ(times[4], t0 + 30'000'000);   // the rotated file: its own datetime, 30 ms on
  EXPECT_EQ(times[6], t0 + 45'000'000);   // after the gap
  EXPECT_EQ(times[8], t0 + 1'000'000'000);  // run 2
  EXPECT_EQ(times[9], t0 + 1'008'000'000);
}

TEST_F(FileSourceTest, UnusableFilesGiveClearErrors) {
  auto message = [](const std::string& path) {
    try {
      FileSource s({path, 16, 0.0, false});
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message((dir_ / "none.wav").string()).find("cannot open"), std::string::npos);
  EXPECT_NE(message((dir_ / "x.mp3").string()).find("unknown recording type"), std::string::npos);
  // A folder replays its SigMF recordings; one without any says what it holds instead.
  std::filesystem::create_directory(dir_ / "rec");
  EXPECT_EQ(message((dir_ / "rec").string()),
            (dir_ / "rec").string() + ": a folder with no recording in it (a folder replays its .sigmf-meta recordings)");
  for (const char* f : {"b.wav", "a.wav", "notes.txt"}) std::ofstream(dir_ / "rec" / f) << "x";
  EXPECT_EQ(message((dir_ / "rec").string()),
            (dir_ / "rec").string() + ": a folder with no SigMF recording in it (a folder replays those): give one of "
                                      "its recordings, a.wav to b.wav (2)");
  // Its recordings must agree in rate, channels and datatype.
  std::filesystem::create_directory(dir_ / "mixed");
  for (const auto& [name, rate] : {std::pair{"a", 1000}, std::pair{"b", 2000}}) {
    std::ofstream(dir_ / "mixed" / (std::string(name) + ".sigmf-meta"))
        << R"({"global": {"core:datatype": "ri16_le", "core:sample_rate": )" << rate << "}}";
    std::ofstream(dir_ / "mixed" / (std::string(name) + ".sigmf-data")) << std::string(40, '\1');
  }
  EXPECT_NE(message((dir_ / "mixed").string()).find("b.sigmf-meta: differs from the folder's first recording"),
            std::string::npos)
      << message((dir_ / "mixed").string());
  // A directory named like a recording, or where the data file should be.
  const std::string is_dir = ": cannot open: is a directory, not a file";
  std::filesystem::create_directory(dir_ / "d.wav");
  EXPECT_EQ(message((dir_ / "d.wav").string()), (dir_ / "d.wav").string().append(is_dir));
  std::filesystem::create_directory(dir_ / "d.sigmf-data");
  std::ofstream(dir_ / "d.sigmf-meta") << R"({"global": {"core:datatype": "ri16_le", "core:sample_rate": 1000}})";
  EXPECT_EQ(message((dir_ / "d.sigmf-meta").string()), (dir_ / "d.sigmf-data").string().append(is_dir));
  std::ofstream(dir_ / "bad.wav") << "RIFF....WAVEjunk";
  EXPECT_NE(message((dir_ / "bad.wav").string()).find("no data chunk"), std::string::npos);
  std::ofstream(dir_ / "t.sigmf-meta") << R"({"global": {"core:datatype": "cf32_le", "core:sample_rate": 1000}})";
  std::ofstream(dir_ / "t.sigmf-data") << "";
  EXPECT_NE(message((dir_ / "t.sigmf-meta").string()).find("'cf32_le' is not supported"), std::string::npos);
  std::ofstream(dir_ / "j.sigmf-meta") << "{not json";
  EXPECT_NE(message((dir_ / "j.sigmf-meta").string()).find("not SigMF metadata"), std::string::npos);
  // Capture segments must be in order, inside the data, and never go back in the source's count.
  std::ofstream(dir_ / "s.sigmf-data") << std::string(400, '\1');  // 200 int16 frames
  auto segments = [&](const std::string& captures) {
    std::ofstream(dir_ / "s.sigmf-meta") << R"({"global": {"core:datatype": "ri16_le", "core:sample_rate": 1000},
        "captures": )" << captures << "}";
    return message((dir_ / "s.sigmf-meta").string());
  };
  EXPECT_NE(segments(R"([{"core:sample_start": 0}, {"core:sample_start": 0}])").find("captures[1]: core:sample_start must be above"),
            std::string::npos);
  EXPECT_NE(segments(R"([{"core:sample_start": 5}])").find("captures[0]: the first capture must start at core:sample_start 0"),
            std::string::npos);
  EXPECT_NE(segments(R"([{"core:sample_start": 0}, {"core:sample_start": 300}])").find("past the data's 200 frames"),
            std::string::npos);
  EXPECT_NE(segments(R"([{"core:sample_start": 0, "core:global_index": 1000}, {"core:sample_start": 100, "core:global_index": 50}])")
                .find("captures[1]: core:global_index goes backwards"),
            std::string::npos);
  EXPECT_NE(segments(R"([{"core:sample_start": 0, "core:datetime": "yesterday"}])").find("core:datetime is not RFC 3339"),
            std::string::npos);
  EXPECT_EQ(segments(R"([{"core:sample_start": 0}, {"core:sample_start": 100, "core:global_index": 150}])"), "no error");
  const std::string eight = write_wav(1, 10, 16, ramp);
  {  // patch the bit depth to 8 (an unsupported PCM width)
    std::fstream f(eight, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(34);
    const uint16_t bits = 8;
    f.write(reinterpret_cast<const char*>(&bits), 2);
  }
  EXPECT_NE(message(eight).find("unsupported WAV format 1 with 8 bits"), std::string::npos);
}

}  // namespace
}  // namespace vigil

#if VIGIL_HAVE_SNDFILE
#include <sndfile.h>

namespace vigil {
namespace {

// FLAC is lossless: a replay delivers exactly the samples written (16-bit as int16, 24-bit as
// int32 with full scale kept), in chunks of any size, with the file's rate and channels.
TEST(FileSource, FlacReplaysEverySampleExactly) {
  const std::string dir = ::testing::TempDir();
  std::mt19937 rng(5);
  for (const int bits : {16, 24}) {
    SCOPED_TRACE(bits);
    const std::string path = dir + "/vigil-test-" + std::to_string(bits) + ".flac";
    const int channels = 3, frames = 20011;
    std::vector<int> samples(size_t(frames) * channels);  // libsndfile ints: left-justified 32-bit
    std::uniform_int_distribution<int> d(bits == 16 ? -32768 : -(1 << 23), bits == 16 ? 32767 : (1 << 23) - 1);
    for (int& v : samples) v = d(rng) * (bits == 16 ? 65536 : 256);
    SF_INFO w{};
    w.samplerate = 96000;
    w.channels = channels;
    w.format = SF_FORMAT_FLAC | (bits == 16 ? SF_FORMAT_PCM_16 : SF_FORMAT_PCM_24);
    SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &w);
    ASSERT_NE(f, nullptr) << sf_strerror(nullptr);
    ASSERT_EQ(sf_writef_int(f, samples.data(), frames), frames);
    sf_close(f);

    FileSourceSpec spec;
    spec.path = path;
    spec.chunk_frames = 1000;
    spec.rate_factor = 0;
    FileSource src(spec);
    ASSERT_EQ(src.format().rate_hz, 96000.0);
    ASSERT_EQ(src.format().channels, 3u);
    ASSERT_EQ(src.format().format, bits == 16 ? SampleFormat::kInt16 : SampleFormat::kInt32);
    std::vector<std::byte> mem(1000 * 3 * 4);
    Chunk chunk;
    chunk.data = mem.data();
    chunk.capacity_bytes = mem.size();
    size_t at = 0;
    while (src.read(chunk) == ReadStatus::kOk) {
      const size_t n = size_t(chunk.header.frames) * channels;
      for (size_t i = 0; i < n; ++i) {
        const int64_t got = bits == 16 ? int64_t(reinterpret_cast<const int16_t*>(chunk.data)[i]) * 65536
                                       : int64_t(reinterpret_cast<const int32_t*>(chunk.data)[i]);
        ASSERT_EQ(got, samples[at + i]) << "sample " << at + i;
      }
      at += n;
    }
    EXPECT_EQ(at, samples.size());
    std::remove(path.c_str());
  }
}

TEST(FileSource, ACorruptFlacIsAClearError) {
  const std::string path = ::testing::TempDir() + "/vigil-bad.flac";
  std::ofstream(path) << "fLaC this is not a FLAC stream";
  try {
    probe_recording(path);
    ADD_FAILURE() << "accepted a corrupt FLAC file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace vigil
#endif
