#include "wire/vrl_frame.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "wire/stream_id.hpp"
#include "wire/vita49.hpp"

namespace vigil::vrl {
namespace {

struct Sent {
  uint32_t stream_id;
  std::vector<float> samples;  // empty: a context packet
};

// Fills one frame of `cap` bytes with random data packets (and a context packet first) until the
// next would not fit; returns the frame's bytes and what went in.
size_t fill_frame(std::mt19937& rng, uint8_t* frame, size_t cap, uint16_t count, std::vector<Sent>& sent) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<size_t> len(1, 300);
  FrameWriter w;
  w.open(frame, cap);
  vita49::ContextPacket c;
  c.stream_id = stream_id(0, 1, 2);
  c.sample_rate_hz = 25600;
  w.add(vita49::encode_context(c, w.cursor(), w.room()));
  sent.push_back({c.stream_id, {}});
  for (uint32_t lane = 0;; ++lane) {
    std::vector<float> x(len(rng));
    if (w.room() < vita49::kDataOverheadBytes + 4 * x.size()) break;
    for (float& v : x) v = u(rng);
    vita49::DataPacket p;
    p.stream_id = stream_id(0, lane % 4, lane / 4);
    p.packet_count = uint8_t(lane & 0xF);
    p.ts_int = 1'800'000'000 + lane;
    const size_t n = vita49::encode_data(p, x.data(), x.size(), w.cursor(), w.room());
    EXPECT_GT(n, 0u);
    w.add(n);
    sent.push_back({p.stream_id, std::move(x)});
  }
  EXPECT_EQ(w.packets(), sent.size());
  return w.close(count);
}

TEST(VrlFrame, PacketsGoInAndComeOutInOrderWithHeaderAndTrailer) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(vita49::kMaxJumboDatagram, 0xAB);
  std::vector<Sent> sent;
  const size_t bytes = fill_frame(rng, buf.data(), buf.size(), 0xABC, sent);
  ASSERT_GT(sent.size(), 3u);
  ASSERT_LE(bytes, buf.size());
  ASSERT_EQ(bytes % 4, 0u);
  // "VRLP", count 0xABC in bits 31-20, size in words; "VEND" last.
  EXPECT_EQ(word_at(buf.data()), 0x56524C50u);
  EXPECT_EQ(word_at(buf.data() + 4), 0xABCu << 20 | uint32_t(bytes / 4));
  EXPECT_EQ(word_at(buf.data() + bytes - 4), 0x56454E44u);
  EXPECT_TRUE(is_frame(buf.data(), bytes));

  size_t i = 0;
  FrameInfo info;
  std::string why;
  ASSERT_TRUE(for_each_packet(
      buf.data(), bytes,
      [&](const uint8_t* packet, size_t n) {
        ASSERT_LT(i, sent.size());
        vita49::Decoded d;
        ASSERT_TRUE(vita49::decode(packet, n, d, &why)) << why;
        EXPECT_EQ(d.stream_id, sent[i].stream_id);
        if (sent[i].samples.empty()) {
          EXPECT_EQ(d.type, vita49::PacketType::kContext);
          EXPECT_EQ(d.sample_rate_hz, 25600);
        } else {
          ASSERT_EQ(d.samples, sent[i].samples.size());
          for (size_t k = 0; k < d.samples; ++k) ASSERT_EQ(d.sample(k), sent[i].samples[k]) << i << " " << k;
        }
        ++i;
      },
      &info, &why))
      << why;
  EXPECT_EQ(i, sent.size());
  EXPECT_EQ(info.packets, sent.size());
  EXPECT_EQ(info.frame_count, 0xABC);
  EXPECT_FALSE(info.has_crc);
}

TEST(VrlFrame, ACountPast12BitsWraps) {
  std::vector<uint8_t> buf(64);
  const size_t n = close_frame(buf.data(), 0, 0x1001);
  EXPECT_EQ(n, kOverheadBytes);
  EXPECT_EQ(word_at(buf.data() + 4) >> 20, 1u);
}

TEST(VrlFrame, AnUnframedDatagramIsOnePacket) {
  std::vector<uint8_t> buf(vita49::kMaxDatagram);
  const std::vector<float> x(100, 0.25f);
  vita49::DataPacket p;
  p.stream_id = 7;
  const size_t n = vita49::encode_data(p, x.data(), x.size(), buf.data(), buf.size());
  EXPECT_FALSE(is_frame(buf.data(), n));
  int calls = 0;
  FrameInfo info;
  EXPECT_TRUE(for_each_packet(
      buf.data(), n,
      [&](const uint8_t* packet, size_t bytes) {
        EXPECT_EQ(packet, buf.data());
        EXPECT_EQ(bytes, n);
        ++calls;
      },
      &info));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(info.packets, 0u);  // not a frame
}

TEST(VrlFrame, MalformedFramesAreRefusedAfterTheGoodPackets) {
  std::mt19937 rng(12);
  std::vector<uint8_t> good(vita49::kMaxJumboDatagram);
  std::vector<Sent> sent;
  const size_t bytes = fill_frame(rng, good.data(), good.size(), 1, sent);
  auto count = [](const std::vector<uint8_t>& f, size_t n, std::string& why) {
    size_t packets = 0;
    const bool ok = for_each_packet(f.data(), n, [&](const uint8_t*, size_t) { ++packets; }, nullptr, &why);
    return std::pair{ok, packets};
  };
  std::string why;

  // The datagram cut short: its size field disagrees, nothing is given out.
  auto [ok, packets] = count(good, bytes - 4, why);
  EXPECT_FALSE(ok);
  EXPECT_EQ(packets, 0u);
  EXPECT_NE(why.find("size field"), std::string::npos) << why;

  // Shorter than a header and trailer, or not whole words.
  std::tie(ok, packets) = count(good, 6, why);
  EXPECT_FALSE(ok);
  std::tie(ok, packets) = count(good, 4, why);
  EXPECT_FALSE(ok);

  // The third packet's size runs past the trailer: the first two are given out, then a refusal.
  std::vector<uint8_t> bad = good;
  size_t at = kHeaderBytes;
  for (int k = 0; k < 2; ++k) at += size_t(word_at(bad.data() + at) & 0xFFFF) * 4;
  bad[at + 2] = 0xFF;
  bad[at + 3] = 0xFF;
  std::tie(ok, packets) = count(bad, bytes, why);
  EXPECT_FALSE(ok);
  EXPECT_EQ(packets, 2u);
  EXPECT_NE(why.find("runs past"), std::string::npos) << why;

  // A packet of size 0 would loop forever: refused.
  bad = good;
  bad[kHeaderBytes + 2] = 0;
  bad[kHeaderBytes + 3] = 0;
  std::tie(ok, packets) = count(bad, bytes, why);
  EXPECT_FALSE(ok);
  EXPECT_EQ(packets, 0u);

  // A CRC in place of "VEND" is reported, not checked.
  bad = good;
  bad[bytes - 1] ^= 0x5A;
  FrameInfo info;
  EXPECT_TRUE(for_each_packet(bad.data(), bytes, [](const uint8_t*, size_t) {}, &info));
  EXPECT_TRUE(info.has_crc);
  EXPECT_EQ(info.packets, sent.size());
}

}  // namespace
}  // namespace vigil::vrl
