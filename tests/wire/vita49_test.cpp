#include "wire/vita49.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "wire/stream_id.hpp"

namespace vigil::vita49 {
namespace {

TEST(Vita49, DataPacketRoundTrip) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const size_t n = max_samples_per_packet(kMaxDatagram);
  EXPECT_EQ(n, 360u);
  std::vector<float> samples(n);
  for (auto& v : samples) v = u(rng);
  DataPacket p;
  p.stream_id = stream_id(1, 2, 3);
  p.packet_count = 9;
  p.ts_int = 1'795'000'000;
  p.ts_frac_ps = 999'999'999'999;
  p.sample_loss = true;
  std::vector<uint8_t> buf(kMaxDatagram, 0xAB);
  const size_t bytes = encode_data(p, samples.data(), n, buf.data(), buf.size());
  EXPECT_EQ(bytes, kMaxDatagram);  // exactly fills the MTU-safe datagram

  // Header word: type 1, C and T set, TSI 1 (UTC), TSF 2 (real-time ps), count, size in words.
  EXPECT_EQ(buf[0], 0x1C);
  EXPECT_EQ(buf[1], 0x69);
  EXPECT_EQ((buf[2] << 8 | buf[3]) * 4, int(bytes));

  Decoded d;
  std::string why;
  ASSERT_TRUE(decode(buf.data(), bytes, d, &why)) << why;
  EXPECT_EQ(d.type, PacketType::kSignalDataWithStreamId);
  EXPECT_EQ(d.stream_id, stream_id(1, 2, 3));
  EXPECT_EQ(d.stream_id, 0x01002003u);
  EXPECT_TRUE(d.has_class_id);
  EXPECT_EQ(d.oui, kOui);
  EXPECT_EQ(d.info_class, kInfoClass);
  EXPECT_EQ(d.packet_class, kPacketClassFloat32);
  EXPECT_EQ(d.packet_count, 9);
  EXPECT_EQ(d.tsi, 1);
  EXPECT_EQ(d.tsf, 2);
  EXPECT_EQ(d.ts_int, 1'795'000'000u);
  EXPECT_EQ(d.ts_frac, 999'999'999'999u);
  ASSERT_EQ(d.samples, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(d.sample(i), samples[i]) << i;
  ASSERT_TRUE(d.has_trailer);
  EXPECT_TRUE(d.trailer & kTrailerSampleLossEnable);
  EXPECT_TRUE(d.trailer & kTrailerSampleLoss);
  EXPECT_TRUE(d.trailer & kTrailerValidData);
  EXPECT_FALSE(d.trailer & kTrailerOverRange);
  EXPECT_FALSE(d.trailer & (kTrailerTimeStepEnable | kTrailerTimeStep)) << "said only where the time line steps";

  p.time_step = true;  // the first packet after a step of the sender's wall clock
  ASSERT_EQ(encode_data(p, samples.data(), n, buf.data(), buf.size()), bytes);
  ASSERT_TRUE(decode(buf.data(), bytes, d, &why)) << why;
  EXPECT_EQ(d.trailer & (kTrailerTimeStepEnable | kTrailerTimeStep), kTrailerTimeStepEnable | kTrailerTimeStep);
  EXPECT_TRUE(d.trailer & kTrailerSampleLoss);
}

// The payload is big-endian float32 whatever the count (the swap runs four words at a time, then
// one by one): each sample's bytes checked against its bits shifted out most significant first,
// and copy_samples from any offset gives the values back exactly.
TEST(Vita49, SamplesAreBigEndianOnTheWireAtEveryLength) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-4, 4);
  for (size_t n = 1; n <= 11; ++n) {
    std::vector<float> samples(n);
    for (auto& v : samples) v = u(rng);
    std::vector<uint8_t> buf(kMaxDatagram, 0xCD);
    const size_t bytes = encode_data(DataPacket{}, samples.data(), n, buf.data(), buf.size());
    ASSERT_EQ(bytes, kDataOverheadBytes + 4 * n);
    Decoded d;
    ASSERT_TRUE(decode(buf.data(), bytes, d));
    ASSERT_EQ(d.samples, n);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t bits = std::bit_cast<uint32_t>(samples[i]);
      for (int b = 0; b < 4; ++b)
        ASSERT_EQ(d.payload[4 * i + b], uint8_t(bits >> (24 - 8 * b))) << "n " << n << " sample " << i << " byte " << b;
    }
    for (size_t first = 0; first < n; ++first) {
      std::vector<float> back(n - first, std::nanf(""));
      d.copy_samples(first, n - first, back.data());
      for (size_t i = first; i < n; ++i) ASSERT_EQ(back[i - first], samples[i]) << "n " << n << " from " << first;
    }
  }
}

TEST(Vita49, PacketCounterWrapsAtSixteen) {
  const float s = 0.5f;
  std::vector<uint8_t> buf(64);
  for (int k = 0; k < 40; ++k) {
    DataPacket p;
    p.packet_count = uint8_t(k & 0xF);
    const size_t bytes = encode_data(p, &s, 1, buf.data(), buf.size());
    Decoded d;
    ASSERT_TRUE(decode(buf.data(), bytes, d));
    EXPECT_EQ(d.packet_count, k % 16);
  }
  DataPacket p;
  p.packet_count = 0x1F;  // only 4 bits go on the wire
  const size_t bytes = encode_data(p, &s, 1, buf.data(), buf.size());
  Decoded d;
  ASSERT_TRUE(decode(buf.data(), bytes, d));
  EXPECT_EQ(d.packet_count, 0xF);
}

TEST(Vita49, ContextPacketCarriesSampleRateAndFormat) {
  ContextPacket c;
  c.stream_id = 77;
  c.sample_rate_hz = 51200.25;
  c.ts_int = 12;
  c.ts_frac_ps = 34;
  std::vector<uint8_t> buf(kContextBytes);
  ASSERT_EQ(encode_context(c, buf.data(), buf.size()), kContextBytes);
  Decoded d;
  std::string why;
  ASSERT_TRUE(decode(buf.data(), kContextBytes, d, &why)) << why;
  EXPECT_EQ(d.type, PacketType::kContext);
  EXPECT_EQ(d.stream_id, 77u);
  EXPECT_TRUE(d.has_sample_rate);
  EXPECT_DOUBLE_EQ(d.sample_rate_hz, 51200.25);
  EXPECT_TRUE(d.has_payload_format);
  // IEEE-754 single (0b01110) in bits 28..24, item and packing size 32 (stored as 31).
  EXPECT_EQ((d.payload_format >> 56) & 0x1F, 0x0Eu);
  EXPECT_EQ((d.payload_format >> 32) & 0x3F, 31u);
  EXPECT_TRUE(d.cif0 & (1u << 31));
  EXPECT_EQ(d.ts_int, 12u);
  EXPECT_EQ(d.ts_frac, 34u);
}

TEST(Vita49, MalformedDatagramsAreRejected) {
  const float s = 1.0f;
  std::vector<uint8_t> buf(64);
  const size_t bytes = encode_data(DataPacket{}, &s, 1, buf.data(), buf.size());
  Decoded d;
  std::string why;
  EXPECT_FALSE(decode(buf.data(), bytes - 4, d, &why));  // size field disagrees
  EXPECT_NE(why.find("size"), std::string::npos);
  EXPECT_FALSE(decode(buf.data(), 3, d, &why));
  buf[0] = 0x3C;  // packet type 3
  EXPECT_FALSE(decode(buf.data(), bytes, d, &why));
  EXPECT_EQ(encode_data(DataPacket{}, &s, 0, buf.data(), buf.size()), 0u);    // no samples
  EXPECT_EQ(encode_data(DataPacket{}, &s, 100, buf.data(), buf.size()), 0u);  // does not fit
}

TEST(Vita49, JumboPacketsHoldMoreSamples) {
  EXPECT_EQ(max_samples_per_packet(kMaxJumboDatagram), 2235u);
  // IPv6's header is 20 bytes longer: 1500 - 40 - 8 and 9000 - 40 - 8.
  EXPECT_EQ(max_datagram(false, false), 1472u);
  EXPECT_EQ(max_datagram(false, true), 1452u);
  EXPECT_EQ(max_datagram(true, true), 8952u);
  EXPECT_EQ(max_samples_per_packet(max_datagram(false, true)), 355u);
  EXPECT_LE(kDataOverheadBytes + 4 * max_samples_per_packet(kMaxJumboDatagram), kMaxJumboDatagram);
}

TEST(Vita49, SplitPicoseconds) {
  uint32_t s;
  uint64_t f;
  split_ps(__int128(1'700'000'000) * 1'000'000'000'000 + 123, s, f);
  EXPECT_EQ(s, 1'700'000'000u);
  EXPECT_EQ(f, 123u);
}

}  // namespace
}  // namespace vigil::vita49
