// StreamMonitor, the receiver's accounting: holes and overlaps on the time line by timestamps,
// packets missing by the 4-bit counter, and the breaks a recording starts a segment at.
#include "wire/stream_monitor.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace vigil {
namespace {

constexpr double kRate = 51200;  // 1 sample = 19 531 250 ps exactly

vita49::Decoded context(uint32_t id) {
  vita49::Decoded p;
  p.type = vita49::PacketType::kContext;
  p.stream_id = id;
  p.has_sample_rate = true;
  p.sample_rate_hz = kRate;
  return p;
}

// A data packet of `samples` whose first sample is `frame` samples after 1000 s.
vita49::Decoded data(uint32_t id, uint8_t count, uint64_t frame, size_t samples) {
  vita49::Decoded p;
  p.type = vita49::PacketType::kSignalDataWithStreamId;
  p.stream_id = id;
  p.packet_count = count & 0xF;
  const __int128 ps = __int128(1000) * 1'000'000'000'000 + __int128(frame) * 19'531'250;
  p.ts_int = uint32_t(ps / 1'000'000'000'000);
  p.ts_frac = uint64_t(ps % 1'000'000'000'000);
  p.samples = samples;
  return p;
}

TEST(StreamMonitor, ContiguousPacketsBreakNothing) {
  StreamMonitor m;
  m.on_packet(context(7));
  for (uint8_t i = 0; i < 40; ++i) m.on_packet(data(7, i, uint64_t(i) * 341, 341));  // 341: no round rate
  const StreamStats& s = m.streams().at(7);
  EXPECT_EQ(s.packets, 40u);
  EXPECT_EQ(s.samples, 40u * 341);
  EXPECT_EQ(s.context_packets, 1u);
  EXPECT_EQ(s.gaps + s.holes + s.overlaps + s.breaks + s.timestamp_errors, 0u);
}

TEST(StreamMonitor, HolesOverlapsAndBackwardsTimeEachBreakTheTimeLine) {
  StreamMonitor m;
  m.on_packet(context(1));
  m.on_packet(data(1, 0, 0, 512));
  m.on_packet(data(1, 1, 512, 512));
  m.on_packet(data(1, 3, 1024 + 512 + 100, 512));  // one packet lost by the counter, 612 samples by time
  EXPECT_EQ(m.streams().at(1).gaps, 1u);
  EXPECT_EQ(m.streams().at(1).holes, 1u);
  EXPECT_EQ(m.streams().at(1).samples_missing, 612u);
  EXPECT_EQ(m.streams().at(1).breaks, 1u);
  // A restart whose filter lags 234 samples more: the next packet starts before this one ended.
  m.on_packet(data(1, 0, 1636 + 512 - 234, 512));
  EXPECT_EQ(m.streams().at(1).overlaps, 1u);
  EXPECT_EQ(m.streams().at(1).samples_overlapping, 234u);
  EXPECT_EQ(m.streams().at(1).timestamp_errors, 0u);  // later than the previous packet's start
  EXPECT_EQ(m.streams().at(1).breaks, 2u);
  EXPECT_EQ(m.streams().at(1).gaps, 1u + 12);  // the counter went 3 -> 0: 12 packets by the counter
  // Back before the previous packet's start: a timestamp error, an overlap, one break.
  m.on_packet(data(1, 1, 100, 512));
  const StreamStats& s = m.streams().at(1);
  EXPECT_EQ(s.timestamp_errors, 1u);
  EXPECT_EQ(s.overlaps, 2u);
  EXPECT_EQ(s.samples_overlapping, 234u + (1914 + 512 - 100));
  EXPECT_EQ(s.breaks, 3u);
  EXPECT_EQ(s.holes, 1u);
}

// A packet whose trailer says the sender's time line starts anew (its wall clock stepped) breaks
// the time line for a recording, but is no hole, overlap or timestamp error: nothing was lost.
TEST(StreamMonitor, ATimeStepBreaksTheTimeLineWithoutAHoleOrAnOverlap) {
  StreamMonitor m;
  m.on_packet(context(3));
  m.on_packet(data(3, 0, 0, 512));
  vita49::Decoded forward = data(3, 1, 512 + 3600 * 51200, 512);  // an hour later
  forward.has_trailer = true;
  forward.trailer = vita49::kTrailerTimeStepEnable | vita49::kTrailerTimeStep;
  m.on_packet(forward);
  m.on_packet(data(3, 2, 1024 + 3600 * 51200, 512));
  vita49::Decoded back = data(3, 3, 1536 + 3600 * 51200 - 2 * 51200, 512);  // then 2 s back
  back.has_trailer = true;
  back.trailer = vita49::kTrailerTimeStepEnable | vita49::kTrailerTimeStep;
  m.on_packet(back);
  const StreamStats& s = m.streams().at(3);
  EXPECT_EQ(s.time_steps, 2u);
  EXPECT_EQ(s.breaks, 2u);
  EXPECT_EQ(s.holes + s.samples_missing + s.overlaps + s.samples_overlapping + s.timestamp_errors + s.gaps, 0u);
  // The indicator bit without its enable bit means nothing: a hole as before.
  vita49::Decoded unflagged = data(3, 4, 1536 + 3600 * 51200 - 2 * 51200 + 512 + 100, 512);
  unflagged.has_trailer = true;
  unflagged.trailer = vita49::kTrailerTimeStep;
  m.on_packet(unflagged);
  EXPECT_EQ(m.streams().at(3).holes, 1u);
  EXPECT_EQ(m.streams().at(3).samples_missing, 100u);
  EXPECT_EQ(m.streams().at(3).time_steps, 2u);
}

TEST(StreamMonitor, WithoutARateOnlyTimestampOrderIsJudged) {
  StreamMonitor m;  // no context packet: holes and overlaps cannot be measured
  m.on_packet(data(2, 0, 0, 512));
  m.on_packet(data(2, 1, 5000, 512));
  m.on_packet(data(2, 2, 5100, 512));
  const StreamStats& s = m.streams().at(2);
  EXPECT_EQ(s.holes + s.overlaps + s.timestamp_errors + s.breaks, 0u);
  m.on_packet(data(2, 3, 0, 512));
  EXPECT_EQ(m.streams().at(2).timestamp_errors, 1u);
  EXPECT_EQ(m.streams().at(2).breaks, 1u);
}

}  // namespace
}  // namespace vigil
