// The ALSA source through real libasound: ALSA's `file` PCM reads a raw file of known samples
// (its `null` slave needs no hardware), loaded in-process with snd_pcm_open_lconf. Every sample
// arrives in order and in its channel, for S16_LE, S24_3LE, S32_LE and FLOAT_LE, mono and
// multi-channel; the time line is frame-exact; the negotiation line says what was granted.
#include "acquisition/alsa_source.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "dsp/sample_convert.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;

std::string file_pcm_config(const fs::path& raw) {
  return "pcm.cap {\n type file\n slave { pcm { type null } }\n file \"/dev/null\"\n infile \"" + raw.string() +
         "\"\n format \"raw\"\n}\n";
}

// Fresh random samples, as the device would store them; `expect` gets their values as vigild
// converts them (full scale = 1.0), channel-major.
std::vector<uint8_t> make_raw(AlsaFormat f, uint32_t frames, uint32_t channels, std::vector<std::vector<float>>& expect) {
  std::mt19937 rng(uint32_t(frames * 31 + channels));
  std::uniform_int_distribution<int32_t> d24(-(1 << 23), (1 << 23) - 1);
  std::uniform_int_distribution<int32_t> d16(-32768, 32767);
  std::uniform_int_distribution<int32_t> d32(INT32_MIN, INT32_MAX);
  std::uniform_real_distribution<float> df(-1.0f, 1.0f);
  expect.assign(channels, std::vector<float>(frames));
  std::vector<uint8_t> raw;
  for (uint32_t i = 0; i < frames; ++i) {
    for (uint32_t c = 0; c < channels; ++c) {
      switch (f) {
        case AlsaFormat::kS16Le: {
          const int16_t v = int16_t(d16(rng));
          raw.push_back(uint8_t(v & 0xFF));
          raw.push_back(uint8_t((v >> 8) & 0xFF));
          expect[c][i] = float(v) / 32768.0f;
          break;
        }
        case AlsaFormat::kS24_3Le: {
          const int32_t v = d24(rng);
          for (int b = 0; b < 3; ++b) raw.push_back(uint8_t((v >> (8 * b)) & 0xFF));
          expect[c][i] = float(double(v) / 8388608.0);
          break;
        }
        case AlsaFormat::kS32Le: {
          const int32_t v = d32(rng);
          for (int b = 0; b < 4; ++b) raw.push_back(uint8_t((uint32_t(v) >> (8 * b)) & 0xFF));
          expect[c][i] = float(double(v) / 2147483648.0);
          break;
        }
        case AlsaFormat::kFloatLe: {
          const float v = df(rng);
          uint8_t b[4];
          std::memcpy(b, &v, 4);
          raw.insert(raw.end(), b, b + 4);
          expect[c][i] = v;
          break;
        }
      }
    }
  }
  return raw;
}

TEST(AlsaSource, EverySampleArrivesInOrderInItsChannel) {
  const fs::path dir = fs::temp_directory_path() / ("vigil-alsa-" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const AlsaFormat f : {AlsaFormat::kS16Le, AlsaFormat::kS24_3Le, AlsaFormat::kS32Le, AlsaFormat::kFloatLe}) {
    for (const uint32_t channels : {1u, 3u}) {
      SCOPED_TRACE(std::string(to_string(f)) + " x " + std::to_string(channels));
      const uint32_t frames = 10000;  // not a multiple of the period: the last chunk is short
      std::vector<std::vector<float>> expect;
      const std::vector<uint8_t> raw = make_raw(f, frames, channels, expect);
      const fs::path file = dir / "in.raw";
      std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(raw.data()), std::streamsize(raw.size()));
      AlsaSpec spec;
      spec.device = "cap";
      spec.rate_hz = 48000;
      spec.channels = channels;
      spec.format = f;
      spec.period_frames = 1024;
      spec.buffer_frames = 4096;
      spec.duration_s = double(frames) / 48000.0;
      AlsaSource src(spec, file_pcm_config(file));
      const SourceFormat fmt = src.format();
      ASSERT_EQ(fmt.chunk_frames, 1024u) << src.negotiation();
      std::vector<std::byte> mem(size_t(fmt.chunk_frames) * channels * 4);
      Chunk chunk;
      chunk.data = mem.data();
      chunk.capacity_bytes = mem.size();
      std::vector<std::vector<float>> got(channels);
      std::vector<float> planar(size_t(channels) * fmt.chunk_frames);
      uint64_t next = 0;
      int64_t t0 = 0;
      while (src.read(chunk) == ReadStatus::kOk) {
        const ChunkHeader& h = chunk.header;
        ASSERT_EQ(h.first_frame, next);
        ASSERT_EQ(h.channels, channels);
        ASSERT_EQ(h.frames_lost_before, 0u);
        if (next == 0) t0 = h.t_first_utc_ns;
        // Frame-exact time line: the first frame's time = frame 0's + first_frame / rate.
        EXPECT_EQ(h.t_first_utc_ns - t0, int64_t(h.first_frame) * 1'000'000'000 / 48000) << next;
        convert_to_planar(chunk.data, h.format, h.frames, channels, fmt.scale, planar.data(), fmt.chunk_frames, nullptr);
        for (uint32_t c = 0; c < channels; ++c)
          got[c].insert(got[c].end(), planar.begin() + c * fmt.chunk_frames, planar.begin() + c * fmt.chunk_frames + h.frames);
        next += h.frames;
      }
      ASSERT_EQ(next, frames);
      for (uint32_t c = 0; c < channels; ++c)
        for (uint32_t i = 0; i < frames; ++i) ASSERT_EQ(got[c][i], expect[c][i]) << "channel " << c << " frame " << i;
      EXPECT_EQ(src.overruns(), 0u);
    }
  }
  fs::remove_all(dir);
}

TEST(AlsaSource, ANegotiatedDeviceSaysWhatItGrantedAndErrorsNameTheDevice) {
  const fs::path dir = fs::temp_directory_path() / ("vigil-alsa-neg-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "in.raw";
  std::ofstream(file) << std::string(4096, '\0');
  AlsaSpec spec;
  spec.device = "cap";
  spec.channels = 2;
  spec.rate_hz = 44100;
  spec.period_frames = 441;
  spec.buffer_frames = 1764;
  spec.strict = true;  // the null PCM grants everything as asked: strict accepts it
  AlsaSource src(spec, file_pcm_config(file));
  EXPECT_EQ(src.negotiation(),
            "ALSA 'cap': asked S16_LE 2 ch 44100 Hz, period 441, buffer 1764; granted 44100 Hz, period 441, buffer 1764");
  EXPECT_EQ(src.format().rate_hz, 44100.0);
  EXPECT_EQ(src.format().chunk_frames, 441u);
  spec.device = "no-such-pcm";
  try {
    AlsaSource missing(spec, file_pcm_config(file));
    ADD_FAILURE() << "opened a PCM that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ALSA device 'no-such-pcm': cannot open for capture"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// The paced test PCM (tests/support/alsa_test_pcm.cpp), fixed at 48 kHz; its clock `ppm` off.
std::string paced_pcm_config(int ppm = 0) {
  return std::string("pcm_type.vigiltest { lib \"") + VIGIL_ALSA_TEST_PCM +
         "\" }\npcm.paced { type vigiltest rate 48000 ppm " + std::to_string(ppm) + " }\n";
}

// Frame index a paced sample encodes (channel 0: the frame index mod 32768).
uint64_t unwrap(int16_t v, uint64_t near) {
  const uint64_t base = near - near % 32768;
  uint64_t n = base + uint16_t(v);
  if (n + 16384 < near) n += 32768;
  if (n > near + 16384 && n >= 32768) n -= 32768;
  return n;
}

// The paced plugin at 48 kHz, 2 channels, 10 ms periods in a 40 ms buffer, and one period's chunk.
struct PacedCapture {
  static AlsaSpec spec() {
    AlsaSpec s;
    s.device = "paced";
    s.rate_hz = 48000;
    s.channels = 2;
    s.period_frames = 480;   // 10 ms
    s.buffer_frames = 1920;  // 40 ms
    return s;
  }
  explicit PacedCapture(int ppm = 0) : src(spec(), paced_pcm_config(ppm)) {}
  AlsaSource src;
  std::vector<std::byte> mem = std::vector<std::byte>(480 * 2 * 2);
  Chunk chunk = [this] {
    Chunk c;
    c.data = mem.data();
    c.capacity_bytes = mem.size();
    return c;
  }();
  int16_t sample(uint32_t i, uint32_t c) const { return reinterpret_cast<const int16_t*>(chunk.data)[i * 2 + c]; }
};

TEST(AlsaSource, AnOverrunIsRecoveredCountedAndItsGapFlagged) {
  PacedCapture cap;
  AlsaSource& src = cap.src;
  Chunk& chunk = cap.chunk;
  auto sample = [&](uint32_t i, uint32_t c) { return cap.sample(i, c); };
  uint64_t expect_value = 0;  // the device frame the next sample should carry
  for (int k = 0; k < 5; ++k) {  // a reader that keeps up: contiguous, unflagged
    chunk.header = {};
    ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
    ASSERT_EQ(chunk.header.frames_lost_before, 0u);
    for (uint32_t i = 0; i < 480; ++i) {
      ASSERT_EQ(uint16_t(sample(i, 0)), uint16_t(expect_value % 32768)) << "chunk " << k << " frame " << i;
      ASSERT_EQ(uint16_t(sample(i, 1)), uint16_t((expect_value + 1000) % 32768));
      ++expect_value;
    }
    EXPECT_EQ(chunk.header.first_frame, uint64_t(k) * 480);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // ~3.7 buffers: the device overruns
  chunk.header = {};
  ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
  EXPECT_EQ(src.overruns(), 1u);
  EXPECT_TRUE(chunk.header.flags & chunk_flags::kSourceOverrun);
  EXPECT_TRUE(chunk.header.flags & chunk_flags::kOverrunBefore);
  // What was really lost: the jump in the device's frame numbering.
  const uint64_t resumed = unwrap(sample(0, 0), expect_value + 7200);
  const uint64_t truly_lost = resumed - expect_value;
  EXPECT_GT(truly_lost, 1920u);  // more than a buffer
  // The estimate from the status timestamps is within 2 periods of it, and the frame numbering
  // of the chunks moves on by the estimate.
  EXPECT_NEAR(double(chunk.header.frames_lost_before), double(truly_lost), 960.0);
  EXPECT_EQ(chunk.header.first_frame, 5 * 480 + chunk.header.frames_lost_before);
  for (uint32_t i = 1; i < 480; ++i) ASSERT_EQ(uint16_t(sample(i, 0)), uint16_t((resumed + i) % 32768)) << i;
  // Capture goes on, contiguous again.
  uint64_t next_value = resumed + 480;
  for (int k = 0; k < 3; ++k) {
    chunk.header = {};
    ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
    EXPECT_EQ(chunk.header.frames_lost_before, 0u);
    ASSERT_EQ(uint16_t(sample(0, 0)), uint16_t(next_value % 32768));
    next_value += 480;
  }
  EXPECT_EQ(src.overruns(), 1u);
}

// A device whose clock runs 2 % fast (a crystal's tens of ppm, over a long run, taken to seconds):
// after 2 s its frame count is 40 ms ahead of the monotonic clock. An overrun's loss is still
// measured within two periods of the truth, from where its chunks lately arrived; measured from
// the start's anchor it would be 1 920 frames short.
TEST(AlsaSource, AnOverrunsLossIsMeasuredPastTheDevicesClockDrift) {
  PacedCapture cap(20000);
  AlsaSource& src = cap.src;
  Chunk& chunk = cap.chunk;
  uint64_t expect_value = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    chunk.header = {};
    ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
    ASSERT_EQ(chunk.header.frames_lost_before, 0u) << "an overrun while keeping up";
    ASSERT_EQ(uint16_t(cap.sample(0, 0)), uint16_t(expect_value % 32768));
    expect_value += 480;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the device overruns
  chunk.header = {};
  ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
  ASSERT_EQ(src.overruns(), 1u);
  const uint64_t truly_lost = unwrap(cap.sample(0, 0), expect_value + 7344) - expect_value;
  EXPECT_GT(truly_lost, 1920u);
  EXPECT_NEAR(double(chunk.header.frames_lost_before), double(truly_lost), 960.0);
}

// An overrun storm: a reader that stalls longer than the device buffer before every read, 20
// times in a row. Each overrun is recovered, counted once, flagged on its chunk, and its loss
// measured within two periods of the truth; the frame numbering moves on by each estimate and
// every chunk's samples stay contiguous within it.
TEST(AlsaSource, AnOverrunStormIsRecoveredAndCountedEveryTime) {
  PacedCapture cap;
  AlsaSource& src = cap.src;
  Chunk& chunk = cap.chunk;
  auto sample = [&](uint32_t i, uint32_t c) { return cap.sample(i, c); };
  chunk.header = {};
  ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
  uint64_t device_next = 480;  // the device frame the next sample would carry without loss
  uint64_t first_frame_next = 480;
  for (int k = 1; k <= 20; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // 1.5 buffers
    chunk.header = {};
    ASSERT_EQ(src.read(chunk), ReadStatus::kOk) << "overrun " << k;
    EXPECT_EQ(src.overruns(), uint64_t(k));
    ASSERT_TRUE(chunk.header.flags & chunk_flags::kSourceOverrun) << k;
    ASSERT_TRUE(chunk.header.flags & chunk_flags::kOverrunBefore) << k;
    const uint64_t resumed = unwrap(sample(0, 0), device_next + 2880);
    const uint64_t truly_lost = resumed - device_next;
    EXPECT_GT(truly_lost, 1920u) << k;
    EXPECT_NEAR(double(chunk.header.frames_lost_before), double(truly_lost), 960.0) << k;
    EXPECT_EQ(chunk.header.first_frame, first_frame_next + chunk.header.frames_lost_before) << k;
    for (uint32_t i = 1; i < 480; ++i) ASSERT_EQ(uint16_t(sample(i, 0)), uint16_t((resumed + i) % 32768)) << k;
    for (uint32_t i = 0; i < 480; ++i) ASSERT_EQ(uint16_t(sample(i, 1)), uint16_t((resumed + i + 1000) % 32768)) << k;
    device_next = resumed + 480;
    first_frame_next = chunk.header.first_frame + 480;
  }
  // After the storm, a reader that keeps up reads contiguous, unflagged chunks again.
  for (int k = 0; k < 3; ++k) {
    chunk.header = {};
    ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
    EXPECT_EQ(chunk.header.frames_lost_before, 0u);
    EXPECT_EQ(chunk.header.first_frame, first_frame_next);
    ASSERT_EQ(uint16_t(sample(0, 0)), uint16_t(device_next % 32768));
    device_next += 480;
    first_frame_next += 480;
  }
  EXPECT_EQ(src.overruns(), 20u);
}

TEST(AlsaSource, StrictRefusesARateTheDeviceCannotGive) {
  AlsaSpec spec;
  spec.device = "paced";  // 48 kHz only
  spec.rate_hz = 44100;
  spec.channels = 1;
  spec.period_frames = 441;
  spec.buffer_frames = 1764;
  AlsaSource adapted(spec, paced_pcm_config());
  EXPECT_EQ(adapted.format().rate_hz, 48000.0);  // the graph follows the granted rate
  EXPECT_NE(adapted.negotiation().find("asked S16_LE 1 ch 44100 Hz"), std::string::npos) << adapted.negotiation();
  EXPECT_NE(adapted.negotiation().find("granted 48000 Hz"), std::string::npos) << adapted.negotiation();
  EXPECT_NE(adapted.negotiation().find("(adapted)"), std::string::npos) << adapted.negotiation();
  spec.strict = true;
  try {
    AlsaSource refused(spec, paced_pcm_config());
    ADD_FAILURE() << "strict accepted " << refused.negotiation();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ALSA device 'paced': strict: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("granted 48000 Hz"), std::string::npos) << e.what();
  }
  spec.strict = false;
  spec.format = AlsaFormat::kS32Le;  // S16_LE only
  EXPECT_THROW(AlsaSource(spec, paced_pcm_config()), std::runtime_error);
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

TEST(AlsaSource, AGoneDeviceIsReopenedWithBackoffAndTheGapFlagged) {
  const fs::path gone = fs::temp_directory_path() / ("vigil-alsa-gone-" + std::to_string(getpid()));
  fs::remove(gone);
  const std::string cfg = std::string("pcm_type.vigiltest { lib \"") + VIGIL_ALSA_TEST_PCM + "\" }\n" +
                          "pcm.paced { type vigiltest rate 48000 gone_file \"" + gone.string() + "\" }\n";
  AlsaSpec spec;
  spec.device = "paced";
  spec.channels = 1;
  spec.period_frames = 480;
  spec.buffer_frames = 1920;
  AlsaSource src(spec, cfg);
  std::vector<std::byte> mem(480 * 2);
  Chunk chunk;
  chunk.data = mem.data();
  chunk.capacity_bytes = mem.size();
  for (int k = 0; k < 3; ++k) ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
  EXPECT_FALSE(src.down());
  // Unplugged: reads fail (as the capture loop sees them, every 10 ms) and the source is down.
  std::ofstream(gone) << "x";
  const auto t_gone = std::chrono::steady_clock::now();
  int failures = 0;
  while (std::chrono::steady_clock::now() - t_gone < std::chrono::milliseconds(600)) {
    if (src.read(chunk) == ReadStatus::kError) ++failures;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(src.down());
  EXPECT_GT(failures, 10);
  EXPECT_EQ(src.reopens(), 0u);
  // Back: within the backoff (0.1, 0.2, 0.4, 0.8 s...) a read succeeds again.
  fs::remove(gone);
  ReadStatus st = ReadStatus::kError;
  const auto t_back = std::chrono::steady_clock::now();
  while (st != ReadStatus::kOk && std::chrono::steady_clock::now() - t_back < std::chrono::seconds(3)) {
    chunk.header = {};
    st = src.read(chunk);
    if (st != ReadStatus::kOk) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(st, ReadStatus::kOk);
  const double outage_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_gone).count();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_back).count(), 1.0);
  EXPECT_FALSE(src.down());
  EXPECT_EQ(src.reopens(), 1u);
  EXPECT_TRUE(chunk.header.flags & chunk_flags::kSourceResumed);
  EXPECT_TRUE(chunk.header.flags & chunk_flags::kOverrunBefore);
  // The gap is the outage, measured on the new device's timestamps (within 0.15 s).
  EXPECT_NEAR(double(chunk.header.frames_lost_before) / 48000.0, outage_s, 0.15);
  EXPECT_EQ(chunk.header.first_frame, 3 * 480 + chunk.header.frames_lost_before);
  chunk.header = {};
  ASSERT_EQ(src.read(chunk), ReadStatus::kOk);
  EXPECT_EQ(chunk.header.frames_lost_before, 0u);
}

}  // namespace
}  // namespace vigil
