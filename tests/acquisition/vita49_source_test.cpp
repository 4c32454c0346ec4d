// Vita49Source through real UDP sockets on loopback, fed by a generator written here from the
// standard's field layout (ANSI/VITA 49.2: header word, stream id, timestamps, context indicator
// fields, payload format), not by wire/vita49's encoder: every sample in its channel, the time of
// each chunk, a dropped packet as exactly its frames lost, a silent stream, and clear errors.
#include "acquisition/vita49_source.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "acquisition/chunk_pool.hpp"
#include "core/clock.hpp"
#include "../support/ports.hpp"

namespace vigil {
namespace {

// One stream's packets, big-endian words as the standard lays them out.
class Generator {
 public:
  enum class Kind { kInt16, kInt32, kFloat32 };
  Generator(uint16_t port, Kind kind, double rate) : kind_(kind), rate_(rate) {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    to_.sin_family = AF_INET;
    to_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to_.sin_port = htons(port);
  }
  ~Generator() { close(fd_); }

  // Context: CIF0 with bandwidth (bit 29), RF reference frequency (27), gain (23), sample rate (21),
  // temperature (18) and payload format (15): the fields between are what a digitizer sends too.
  void context(uint32_t stream, double rate_hz) {
    // Context packet (0100), no class id, TSI UTC (integer seconds only), then CIF0 and its fields
    // in descending bit order.
    std::vector<uint32_t> w = {0, stream, 1'790'000'000u};
    w.push_back(1u << 29 | 1u << 27 | 1u << 23 | 1u << 21 | 1u << 18 | 1u << 15);
    push64(w, uint64_t(20e6 * (1 << 20)));   // bandwidth
    push64(w, uint64_t(100e6 * (1 << 20)));  // RF reference frequency
    w.push_back(0x00800080);                 // gain
    push64(w, uint64_t(rate_hz * (1 << 20) + 0.5));
    w.push_back(25 << 6);                    // temperature
    const uint32_t item = kind_ == Kind::kInt16 ? 15 : 31, format = kind_ == Kind::kFloat32 ? 0x0Eu : 0u;
    push64(w, uint64_t(format << 24 | item << 6 | item) << 32);
    w[0] = 4u << 28 | 1u << 22 | uint32_t(context_count_++ & 0xF) << 16 | uint32_t(w.size());
    send(w);
  }

  // Samples [first, first + n) of a stream, stamped with UTC picoseconds of its first sample.
  void data(uint32_t stream, __int128 t_ps, const std::vector<int64_t>& values, uint8_t count) {
    std::vector<uint32_t> w = {0, stream, uint32_t(t_ps / 1'000'000'000'000)};
    push64(w, uint64_t(t_ps % 1'000'000'000'000));
    if (kind_ == Kind::kInt16) {
      for (size_t i = 0; i < values.size(); i += 2) {
        const uint32_t hi = uint16_t(values[i]), lo = i + 1 < values.size() ? uint16_t(values[i + 1]) : 0;
        w.push_back(hi << 16 | lo);
      }
    } else if (kind_ == Kind::kInt32) {
      for (int64_t v : values) w.push_back(uint32_t(int32_t(v)));
    } else {
      for (int64_t v : values) {
        const float f = float(v) / 65536.0f;
        uint32_t u;
        std::memcpy(&u, &f, 4);
        w.push_back(u);
      }
    }
    w.push_back(0);  // trailer
    // Signal data with stream id (0001), no class id, trailer present, TSI UTC, TSF picoseconds.
    w[0] = 1u << 28 | 1u << 26 | 1u << 22 | 2u << 20 | uint32_t(count & 0xF) << 16 | uint32_t(w.size());
    send(w);
  }

 private:
  static void push64(std::vector<uint32_t>& w, uint64_t v) {
    w.push_back(uint32_t(v >> 32));
    w.push_back(uint32_t(v));
  }
  void send(const std::vector<uint32_t>& words) {
    std::vector<uint32_t> be(words.size());
    for (size_t i = 0; i < words.size(); ++i) be[i] = htonl(words[i]);
    sendto(fd_, be.data(), be.size() * 4, 0, reinterpret_cast<const sockaddr*>(&to_), sizeof to_);
  }
  int fd_;
  sockaddr_in to_{};
  Kind kind_;
  double rate_;
  int context_count_ = 0;
};

constexpr double kRate = 48000;
constexpr uint32_t kSamplesAPacket = 200;
const __int128 kT0 = __int128(1'790'000'000) * 1'000'000'000'000 + 123'456'789'000;

// Sample k of stream s: random but reproducible, full 16-bit range.
int64_t value(uint32_t s, uint64_t k, Generator::Kind kind) {
  const int64_t v = int64_t(std::mt19937(uint32_t(s * 1'000'003 + k))() % 65536) - 32768;
  return kind == Generator::Kind::kInt32 ? v * 65536 + int64_t(k % 65536) : v;
}

struct Rig {
  uint16_t port = test::free_udp_port();
  Generator::Kind kind;
  Generator gen;
  std::atomic<bool> stop{false};
  std::thread contexts;
  Rig(Generator::Kind k, const std::vector<uint32_t>& streams, double context_rate = kRate)
      : kind(k), gen(port, k, kRate) {
    contexts = std::thread([this, streams, context_rate] {
      while (!stop)
        for (uint32_t s : streams) {
          gen.context(s, context_rate);
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
  }
  ~Rig() {
    stop = true;
    contexts.join();
  }
  Vita49SourceSpec spec(std::vector<uint32_t> streams, uint32_t chunk = 1000) const {
    Vita49SourceSpec s;
    s.listen_host = "127.0.0.1";
    s.listen_port = port;
    s.streams = std::move(streams);
    s.rate_hz = kRate;
    s.chunk_frames = chunk;
    s.max_wait_s = 0.05;
    s.start_timeout_s = 5;
    return s;
  }
  // Packets [first, last) of every stream, interleaved; `skip`: (stream, packet) not sent.
  void send(const std::vector<uint32_t>& streams, uint64_t first, uint64_t last,
            const std::set<std::pair<uint32_t, uint64_t>>& skip = {}) {
    for (uint64_t p = first; p < last; ++p)
      for (uint32_t s : streams) {
        if (skip.count({s, p})) continue;
        std::vector<int64_t> v(kSamplesAPacket);
        for (uint32_t i = 0; i < kSamplesAPacket; ++i) v[i] = value(s, p * kSamplesAPacket + i, kind);
        gen.data(s, kT0 + frames_to_ps(p * kSamplesAPacket, kRate), v, uint8_t(p));
      }
  }
};

// Chunks until `frames` have come (or 3 s), each checked against the generator's values.
struct Got {
  uint64_t frames = 0, lost = 0, chunks = 0, flagged = 0, end = 0;  // end: after the last chunk's frames
  std::vector<uint64_t> firsts;
};
Got read_all(Vita49Source& src, const std::vector<uint32_t>& streams, uint64_t frames, Generator::Kind kind,
             std::set<uint32_t> zero_streams = {}) {
  ChunkPool pool(2, 1000 * streams.size() * 4);
  Chunk& c = pool.chunk(0);
  Got got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (got.frames + got.lost < frames && std::chrono::steady_clock::now() < until) {
    c.header = {};
    const ReadStatus st = src.read(c);
    if (st == ReadStatus::kIdle) continue;
    EXPECT_EQ(st, ReadStatus::kOk);
    const ChunkHeader& h = c.header;
    got.lost += h.frames_lost_before;
    if (h.flags & chunk_flags::kOverrunBefore) ++got.flagged;
    got.firsts.push_back(h.first_frame);
    EXPECT_EQ(h.t_first_utc_ns, int64_t((kT0 + frames_to_ps(h.first_frame, kRate)) / 1000)) << h.first_frame;
    for (uint32_t f = 0; f < h.frames; ++f)
      for (size_t s = 0; s < streams.size(); ++s) {
        const uint64_t k = h.first_frame + f;
        const size_t i = size_t(f) * streams.size() + s;
        const int64_t want = zero_streams.count(streams[s]) ? 0 : value(streams[s], k, kind);
        int64_t have;
        if (kind == Generator::Kind::kInt16) have = reinterpret_cast<const int16_t*>(c.data)[i];
        else if (kind == Generator::Kind::kInt32) have = reinterpret_cast<const int32_t*>(c.data)[i];
        else have = int64_t(reinterpret_cast<const float*>(c.data)[i] * 65536.0f);
        if (have != want) {
          ADD_FAILURE() << "frame " << k << " stream " << streams[s] << ": " << have << ", not " << want;
          return got;
        }
      }
    got.frames += h.frames;
    got.end = h.first_frame + h.frames;
    ++got.chunks;
  }
  return got;
}

TEST(Vita49Source, EverySampleOfEveryFormatArrivesInItsChannelAtItsTime) {
  for (const auto kind : {Generator::Kind::kInt16, Generator::Kind::kInt32, Generator::Kind::kFloat32}) {
    const std::vector<uint32_t> streams = {0x01000002, 0x01000001, 0x0100000a};  // channel order is the list's
    Rig rig(kind, streams);
    // Every packet is sent: no stream may be taken for silent while the reader catches up (under
    // qemu one was, 50 ms behind the others, and its samples became zeros).
    Vita49SourceSpec spec = rig.spec(streams);
    spec.max_wait_s = 2;
    Vita49Source src(spec);
    EXPECT_EQ(src.format().format, kind == Generator::Kind::kInt16   ? SampleFormat::kInt16
                                   : kind == Generator::Kind::kInt32 ? SampleFormat::kInt32
                                                                     : SampleFormat::kFloat32);
    EXPECT_EQ(src.format().channels, 3u);
    rig.send(streams, 0, 65);  // 12 000 frames and a few more
    const Got got = read_all(src, streams, 12000, kind);
    EXPECT_EQ(got.frames, 12000u);
    EXPECT_EQ(got.lost, 0u);
    EXPECT_EQ(got.chunks, 12u);
    EXPECT_FALSE(src.down());
  }
}

TEST(Vita49Source, ADroppedPacketIsExactlyItsFramesLostFlaggedAsAnOverrun) {
  const std::vector<uint32_t> streams = {7, 8};
  Rig rig(Generator::Kind::kInt16, streams);
  Vita49Source src(rig.spec(streams));
  // Packet 12 of stream 8 and packets 30-31 of stream 7 never come.
  rig.send(streams, 0, 65, {{8, 12}, {7, 30}, {7, 31}});
  // All 13 000 frames: the chunk that ends there needs the last packet of both streams, so every
  // packet sent has been taken when the counts are read (with 12 000, whether the last ones had
  // been was a matter of timing: 126 of 127 once under ThreadSanitizer).
  const Got got = read_all(src, streams, 65 * kSamplesAPacket, Generator::Kind::kInt16);
  EXPECT_EQ(got.lost, 3u * kSamplesAPacket);
  EXPECT_EQ(got.end, 65u * kSamplesAPacket);
  EXPECT_EQ(got.frames + got.lost, got.end);  // every frame delivered or said lost
  EXPECT_EQ(got.flagged, 2u);
  // The chunk before each hole ends at it; the next starts after it.
  for (uint64_t at : {uint64_t(13 * kSamplesAPacket), uint64_t(32 * kSamplesAPacket)})
    EXPECT_NE(std::find(got.firsts.begin(), got.firsts.end(), at), got.firsts.end()) << at;
  EXPECT_EQ(src.overruns(), 2u);
  std::map<std::string, uint64_t> counts;
  for (const auto& [name, v] : src.counts()) counts[name] = v;
  EXPECT_EQ(counts["packets_lost"], 3u);
  EXPECT_EQ(counts["frames_lost"], 3u * kSamplesAPacket);
  EXPECT_EQ(counts["packets"], 2u * 65 - 3);
}

TEST(Vita49Source, ASilentStreamIsZerosAfterTheWaitCountedAndTheSourceDown) {
  const std::vector<uint32_t> streams = {1, 2};
  Rig rig(Generator::Kind::kInt16, streams);
  Vita49Source src(rig.spec(streams));
  rig.send(streams, 0, 20);      // 4000 frames of both
  rig.send({1}, 20, 40);         // then stream 2 falls silent
  const Got both = read_all(src, streams, 4000, Generator::Kind::kInt16);
  EXPECT_EQ(both.frames, 4000u);
  const Got after = read_all(src, streams, 4000, Generator::Kind::kInt16, {2});
  EXPECT_EQ(after.frames, 4000u);
  EXPECT_EQ(after.lost, 0u);
  EXPECT_TRUE(src.down());
  std::map<std::string, uint64_t> counts;
  for (const auto& [name, v] : src.counts()) counts[name] = v;
  EXPECT_EQ(counts["missing_samples"], 4000u);
}

// A silent stream that comes back an hour ahead (a digitizer whose clock was set): the hour is
// frames lost, counted and flagged on the chunk where the stream's samples resume, not an hour of
// zeros delivered chunk by chunk first (a fuzz finding: unpaced, the capture thread was held up
// producing them). Its packets keep coming, a few each time the source has nothing to deliver;
// those that arrive before the source has skipped the hour are beyond its window and lost too.
TEST(Vita49Source, ASilentStreamBackFarAheadIsFramesLostNotAnHourOfZeros) {
  const std::vector<uint32_t> streams = {1, 2};
  Rig rig(Generator::Kind::kInt16, streams);
  Vita49Source src(rig.spec(streams));
  rig.send(streams, 0, 20);  // 4000 frames of both
  rig.send({1}, 20, 40);     // then stream 2 falls silent, and after 8000 frames stream 1 too
  EXPECT_EQ(read_all(src, streams, 4000, Generator::Kind::kInt16).frames, 4000u);
  EXPECT_EQ(read_all(src, streams, 4000, Generator::Kind::kInt16, {2}).frames, 4000u);
  uint64_t next_packet = 864'000;  // an hour ahead: packets of 200 frames at 48 kHz
  rig.send({2}, next_packet, next_packet + 5);
  next_packet += 5;
  ChunkPool pool(2, 1000 * streams.size() * 2);
  Chunk& c = pool.chunk(0);
  uint64_t chunks = 0, frames_before = 0;
  bool resumed = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!resumed && std::chrono::steady_clock::now() < until) {
    c.header = {};
    const ReadStatus st = src.read(c);
    if (st == ReadStatus::kIdle) {
      rig.send({2}, next_packet, next_packet + 5);
      next_packet += 5;
      continue;
    }
    ASSERT_EQ(st, ReadStatus::kOk);
    ++chunks;
    const ChunkHeader& h = c.header;
    if (h.frames_lost_before == 0) {
      frames_before += h.frames;
      continue;
    }
    resumed = true;
    EXPECT_TRUE(h.flags & chunk_flags::kOverrunBefore);
    EXPECT_EQ(h.first_frame, 8000 + frames_before + h.frames_lost_before);
    EXPECT_GE(h.first_frame, 864'000u * kSamplesAPacket);
    EXPECT_EQ(h.first_frame % kSamplesAPacket, 0u);  // where one of stream 2's packets began
    for (uint32_t f = 0; f < h.frames; ++f) {
      ASSERT_EQ(reinterpret_cast<const int16_t*>(c.data)[f * 2], 0) << f;  // stream 1: silent
      ASSERT_EQ(reinterpret_cast<const int16_t*>(c.data)[f * 2 + 1], value(2, h.first_frame + f, rig.kind)) << f;
    }
    std::map<std::string, uint64_t> counts;
    for (const auto& [name, v] : src.counts()) counts[name] = v;
    EXPECT_EQ(counts["frames_lost"], h.frames_lost_before);
  }
  ASSERT_TRUE(resumed) << chunks << " chunks of " << frames_before << " frames, and no loss";
  EXPECT_LE(frames_before, 10'896u);  // at most what the source's window held (its ring)
}

TEST(Vita49Source, TheFirstStreamsToAppearAreTheChannelsWhenNoneAreListed) {
  const std::vector<uint32_t> streams = {0x20, 0x10};
  Rig rig(Generator::Kind::kInt32, streams);
  Vita49SourceSpec spec = rig.spec({});
  spec.channels = 2;
  Vita49Source src(spec);
  ASSERT_EQ(src.streams().size(), 2u);
  EXPECT_NE(src.describe().find("streams 000000"), std::string::npos) << src.describe();
  rig.send(streams, 0, 15);
  const Got got = read_all(src, src.streams(), 2000, Generator::Kind::kInt32);
  EXPECT_EQ(got.frames, 2000u);
}

TEST(Vita49Source, WhatItCannotUseIsAClearErrorNamingTheStream) {
  auto message = [](const Vita49SourceSpec& s) {
    try {
      Vita49Source src(s);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  {
    Rig rig(Generator::Kind::kInt16, {5}, 44100);
    const std::string m = message(rig.spec({5}));
    EXPECT_NE(m.find("stream 00000005's context packets say 44100"), std::string::npos) << m;
    EXPECT_NE(m.find("source.rate_hz is 48000"), std::string::npos) << m;
  }
  {
    Vita49SourceSpec s;  // nobody sends
    s.listen_host = "127.0.0.1";
    s.listen_port = test::free_udp_port();
    s.streams = {3, 4};
    s.rate_hz = kRate;
    s.start_timeout_s = 0.3;
    const std::string m = message(s);
    EXPECT_NE(m.find("within 0.3 s, no context packet with a payload format from streams 00000003, 00000004"),
              std::string::npos)
        << m;
    s.streams.clear();
    s.channels = 2;
    EXPECT_NE(message(s).find("0 of 2 streams came"), std::string::npos) << message(s);
  }
}

}  // namespace
}  // namespace vigil
