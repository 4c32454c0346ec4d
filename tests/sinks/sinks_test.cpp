// The sinks on their own, through real UDP sockets on loopback: what a VITA 49 sink sends for a
// slot (context first, every sample, its time and its flags), a decimating sink's carried loss
// flag, an event sink's line packing and status timing, and the receiver watch's log lines.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acquisition/chunk.hpp"
#include "core/rt_log.hpp"
#include "sinks/event_udp_sink.hpp"
#include "sinks/output_slot.hpp"
#include "sinks/vita49_udp_sink.hpp"
#include "../support/udp_receiver.hpp"
#include "wire/stream_id.hpp"
#include "wire/vita49.hpp"
#include "wire/vrl_frame.hpp"

namespace vigil {
namespace {

using test::UdpSocket;

// Every datagram waiting on `s` (the sender has returned: on loopback they are all there).
std::vector<std::vector<uint8_t>> drain(const UdpSocket& s) {
  std::vector<std::vector<uint8_t>> out;
  std::vector<uint8_t> buf(65536);
  for (;;) {
    const ssize_t n = recv(s.fd, buf.data(), buf.size(), 0);
    if (n < 0) break;
    out.emplace_back(buf.begin(), buf.begin() + n);
  }
  return out;
}

__int128 packet_ps(const vita49::Decoded& d) { return __int128(d.ts_int) * 1'000'000'000'000 + d.ts_frac; }

struct DataSinkRig {
  UdpSocket receiver;
  boost::asio::io_context io;
  SinkCounters counters;
  RtLog log;
  StreamFormat format;
  std::unique_ptr<Vita49UdpSink> sink;

  DataSinkRig(uint32_t channels, uint32_t decimation, uint32_t delay_frames, const std::string& framing = "none") {
    format.rate_hz = 48000;
    format.channels = channels;
    format.bands = 1;
    format.band_names = {""};
    format.delay_frames = delay_frames;
    Vita49UdpSink::Params p;
    p.settings.stream = "input";
    p.settings.destination = {"127.0.0.1", receiver.port};
    p.settings.decimation = decimation;
    p.settings.framing = framing;
    p.output_index = 1;
    p.format = &format;
    p.input_rate_hz = 48000;
    sink = std::make_unique<Vita49UdpSink>(io, std::move(p), nullptr, counters, log);
  }
};

// A slot of `frames` random samples per lane for data output 1 (output 0 left empty).
OutputSlot random_slot(uint32_t lanes, uint32_t frames, uint64_t first_frame, int64_t t_utc_ns, std::mt19937& rng) {
  OutputSlot slot;
  slot.frames = frames;
  slot.stride = frames;
  slot.header.first_frame = first_frame;
  slot.header.frames = frames;
  slot.header.t_first_utc_ns = t_utc_ns;
  slot.data.resize(2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  slot.data[1].resize(size_t(lanes) * frames);
  for (float& x : slot.data[1]) x = u(rng);
  return slot;
}

TEST(Vita49UdpSink, AChunkGoesOutAsContextThenEverySampleStampedWithItsInputFrame) {
  std::mt19937 rng(std::random_device{}());
  const uint32_t channels = 3, frames = 700, delay = 17;  // 700 samples: two packets a lane (1472-byte datagrams)
  DataSinkRig rig(channels, 1, delay);
  const int64_t t0 = 1'790'000'000'123'456'789;
  const OutputSlot slot = random_slot(channels, frames, 4800, t0, rng);
  rig.sink->send_chunk(slot, true);

  std::vector<float> got[channels];
  int contexts = 0;
  std::vector<uint8_t> counts(channels, 0);
  for (const auto& dg : drain(rig.receiver)) {
    vita49::Decoded d;
    std::string why;
    ASSERT_TRUE(vita49::decode(dg.data(), dg.size(), d, &why)) << why;
    const uint32_t c = d.stream_id & 0xFFF;
    ASSERT_EQ(d.stream_id, stream_id(1, 0, c));
    ASSERT_LT(c, channels);
    if (d.type == vita49::PacketType::kContext) {
      EXPECT_TRUE(got[c].empty()) << "a lane's context packet goes before its data";
      EXPECT_DOUBLE_EQ(d.sample_rate_hz, 48000.0);
      ++contexts;
      continue;
    }
    EXPECT_EQ(d.packet_count, counts[c]);
    counts[c] = uint8_t((counts[c] + 1) & 0xF);
    // The packet's first sample belongs to input frame (its index in the chunk) - delay.
    const __int128 want_ps = __int128(t0) * 1000 + frames_to_ps(got[c].size(), 48000) - frames_to_ps(delay, 48000);
    EXPECT_TRUE(packet_ps(d) == want_ps) << "lane " << c << " at sample " << got[c].size();
    EXPECT_FALSE(d.trailer & vita49::kTrailerSampleLoss);
    const size_t at = got[c].size();
    got[c].resize(at + d.samples);
    d.copy_samples(0, d.samples, got[c].data() + at);
  }
  EXPECT_EQ(contexts, int(channels));
  for (uint32_t c = 0; c < channels; ++c) {
    ASSERT_EQ(got[c].size(), frames) << "lane " << c;
    for (uint32_t i = 0; i < frames; ++i) ASSERT_EQ(got[c][i], slot.data[1][size_t(c) * frames + i]) << c << "," << i;
    EXPECT_EQ(counts[c], 2) << "two data packets a lane";
  }
  EXPECT_EQ(rig.counters.packets_sent.load(), 2u * channels);
  EXPECT_EQ(rig.counters.context_packets_sent.load(), channels);
  EXPECT_EQ(rig.counters.send_errors.load(), 0u);
  const SinkStatus st = rig.sink->describe();
  EXPECT_STREQ(st.kind, "vita49");
  EXPECT_EQ(st.stream, "input");
  EXPECT_EQ(st.datagrams, 3u * channels);
  EXPECT_EQ(st.destination, "127.0.0.1:" + std::to_string(rig.receiver.port));
}

// Found by trying bad input: chunks carry whole nanoseconds, so at 48 kHz with 500-frame chunks
// the packets were up to 667 ps off the picoseconds PROTOCOL.md promises. Each packet now lies on
// the frame-exact line (to the picosecond, rounded down), until the time line really moves.
TEST(Vita49UdpSink, PacketsAreStampedToThePicosecondAcrossChunksOfWholeNanoseconds) {
  std::mt19937 rng(std::random_device{}());
  const uint32_t frames = 500;
  DataSinkRig rig(1, 1, 0);
  const int64_t start_ns = 1'790'000'000'000'000'123;
  const int64_t step_ns = 2'000'000;  // the wall clock steps before chunk 6
  std::vector<__int128> stamps;
  for (uint64_t k = 0; k < 10; ++k) {
    const uint64_t first = k * frames;
    // As the sources stamp a chunk: the time line's nanosecond, rounded down (frames_to_ns).
    const int64_t t = start_ns + frames_to_ns(first, 48000) + (k >= 6 ? step_ns : 0);
    rig.sink->send_chunk(random_slot(1, frames, first, t, rng), true);
    for (const auto& dg : drain(rig.receiver)) {
      vita49::Decoded d;
      ASSERT_TRUE(vita49::decode(dg.data(), dg.size(), d, nullptr));
      if (d.type == vita49::PacketType::kSignalDataWithStreamId) stamps.push_back(packet_ps(d));
    }
  }
  ASSERT_EQ(stamps.size(), 20u);  // two packets (360 + 140 samples) a chunk
  for (uint64_t k = 0; k < 10; ++k)
    for (uint64_t p = 0; p < 2; ++p) {
      const uint64_t frame = k * frames + p * 360;
      // Exact: start + frame / 48000 s in picoseconds, rounded down; after the step, on a line
      // anchored at chunk 6's own stamp.
      const __int128 want = k < 6 ? __int128(start_ns) * 1000 + frames_to_ps(frame, 48000)
                                  : (__int128(start_ns + frames_to_ns(6 * frames, 48000) + step_ns) * 1000 +
                                     frames_to_ps(frame - 6 * frames, 48000));
      EXPECT_TRUE(stamps[2 * k + p] == want)
          << "chunk " << k << " packet " << p << ": off by " << int64_t(stamps[2 * k + p] - want) << " ps";
    }
  // Chunk 1 starts 10 416 666.666... ns in: its whole-nanosecond stamp is 667 ps early, the packet not.
  EXPECT_TRUE(stamps[2] - stamps[0] == frames_to_ps(500, 48000));
  EXPECT_TRUE(frames_to_ps(500, 48000) % 1000 != 0);
}

TEST(Vita49UdpSink, ALossInAChunkThatKeepsNoSampleGoesOnTheNextKeptSample) {
  std::mt19937 rng(std::random_device{}());
  DataSinkRig rig(1, 4, 0);
  const int64_t t0 = 1'790'000'000'000'000'000;
  // Frames 1 and 2 of the stream: a decimation by 4 keeps frames 0, 4, 8, ...: none of these.
  OutputSlot empty = random_slot(1, 2, 1, t0, rng);
  empty.header.flags = chunk_flags::kOverrunBefore;
  rig.sink->send_chunk(empty, true);
  // Frames 3..12 (after no loss of their own): keeps 4 and 8 and 12.
  const OutputSlot next = random_slot(1, 10, 3, t0 + 1'000'000, rng);
  rig.sink->send_chunk(next, true);
  int data = 0;
  for (const auto& dg : drain(rig.receiver)) {
    vita49::Decoded d;
    ASSERT_TRUE(vita49::decode(dg.data(), dg.size(), d));
    if (d.type == vita49::PacketType::kContext) {
      EXPECT_DOUBLE_EQ(d.sample_rate_hz, 12000.0);
      continue;
    }
    ++data;
    EXPECT_TRUE(d.trailer & vita49::kTrailerSampleLoss) << "the loss before the first chunk, said on the next packet";
    ASSERT_EQ(d.samples, 3u);
    // The pipeline puts a decimating output's kept samples (frames 4, 8, 12) at the lane's start.
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(d.sample(i), next.data[1][i]);
    EXPECT_TRUE(packet_ps(d) == __int128(t0 + 1'000'000) * 1000 + frames_to_ps(1, 48000)) << "stamped at frame 4";
  }
  EXPECT_EQ(data, 1);
}

TEST(Vita49UdpSink, VrlFramesCarryTheSamePackets) {
  std::mt19937 rng(std::random_device{}());
  DataSinkRig rig(2, 1, 0, "vrl");
  const OutputSlot slot = random_slot(2, 100, 0, 1'790'000'000'000'000'000, rng);
  rig.sink->send_chunk(slot, true);
  const auto datagrams = drain(rig.receiver);
  size_t packets = 0;
  for (const auto& dg : datagrams) {
    ASSERT_TRUE(vrl::is_frame(dg.data(), dg.size()));
    std::string why;
    ASSERT_TRUE(vrl::for_each_packet(
        dg.data(), dg.size(),
        [&](const uint8_t* p, size_t bytes) {
          vita49::Decoded d;
          EXPECT_TRUE(vita49::decode(p, bytes, d));
          if (d.type == vita49::PacketType::kSignalDataWithStreamId) {
            for (size_t i = 0; i < d.samples; ++i)
              EXPECT_EQ(d.sample(i), slot.data[1][size_t(d.stream_id & 0xFFF) * 100 + i]);
          }
          ++packets;
        },
        nullptr, &why))
        << why;
  }
  EXPECT_EQ(datagrams.size(), 2u) << "the context packets in one frame, the data in another";
  EXPECT_EQ(packets, 4u);
  EXPECT_EQ(rig.counters.packets_sent.load(), 2u);
  EXPECT_EQ(rig.counters.context_packets_sent.load(), 2u);
}

TEST(EventUdpSink, LinesPackAPassIntoDatagramsAndStatusComesOnItsInterval) {
  UdpSocket receiver;
  boost::asio::io_context io;
  SinkCounters counters;
  RtLog log;
  EventOutputSettings s;
  s.destination = {"127.0.0.1", receiver.port};
  s.framing = "lines";
  s.status_interval_s = 2;
  EventUdpSink sink(io, s, 2048, counters, log);
  DatagramBatch texts(UdpSender::kMaxBatch, 2048);
  std::vector<std::string_view> types;
  std::vector<std::string> sent;
  for (int i = 0; i < 12; ++i) {  // 12 texts of ~300 bytes: four to a 1472-byte datagram
    sent.push_back("{\"type\":\"ae_hit\",\"seq\":" + std::to_string(i) + ",\"pad\":\"" + std::string(270, 'x') + "\"}");
    std::memcpy(texts.next(), sent.back().data(), sent.back().size());
    texts.commit(sent.back().size());
    types.push_back("ae_hit");
  }
  sink.send_events({texts, types});
  const auto datagrams = drain(receiver);
  std::vector<std::string> lines;
  for (const auto& dg : datagrams) {
    EXPECT_LE(dg.size(), 1472u);
    std::string text(dg.begin(), dg.end());
    for (size_t at = 0, nl; at <= text.size(); at = nl + 1) {
      nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      lines.push_back(text.substr(at, nl - at));
    }
  }
  EXPECT_EQ(datagrams.size(), 3u);
  EXPECT_EQ(lines, sent);
  EXPECT_EQ(counters.events_sent.load(), 12u);

  EXPECT_FALSE(sink.status_due(1'000'000'000, false)) << "the first look starts the interval";
  EXPECT_FALSE(sink.status_due(2'999'999'999, false));
  EXPECT_TRUE(sink.status_due(3'000'000'000, false));
  EXPECT_FALSE(sink.status_due(3'100'000'000, false));
  EXPECT_TRUE(sink.status_due(3'100'000'000, true)) << "the final report goes at once";
  sink.send_event("status", "{\"type\":\"status\"}");
  const auto status = drain(receiver);
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(std::string(status[0].begin(), status[0].end()), "{\"type\":\"status\"}");
  EXPECT_EQ(counters.events_sent.load(), 13u);
}

TEST(EventUdpSink, AnAbsentReceiverIsLoggedOnceAndItsReturnToo) {
  uint16_t port = 0;
  {
    const UdpSocket closed;  // a port just freed: nobody listens there
    port = closed.port;
  }
  boost::asio::io_context io;
  SinkCounters counters;
  RtLog log;
  EventOutputSettings s;
  s.destination = {"127.0.0.1", port};
  EventUdpSink sink(io, s, 2048, counters, log);
  for (int i = 0; i < 6; ++i) {  // loopback answers "port unreachable" to every other send
    sink.send_event("alarm", "{}");
    sink.housekeeping(int64_t(i) * 1'000'000);
  }
  EXPECT_GT(counters.send_errors.load(), 0u);
  EXPECT_EQ(sink.describe().refused, counters.send_errors.load());
  RtLogRecord r;
  ASSERT_TRUE(log.pop(r));
  EXPECT_EQ(std::string(r.text), "output 127.0.0.1:" + std::to_string(port) +
                                     ": no receiver there (port unreachable); sending goes on, failures are counted");
  EXPECT_FALSE(log.pop(r)) << "said once, not for every refusal";

  const UdpSocket listener(port);  // someone listens again
  ASSERT_EQ(listener.port, port);
  // A refusal the kernel still holds for the socket fails this send (counted as one more).
  const uint64_t sent_before = counters.events_sent.load();  // handed to the kernel for nobody
  sink.send_event("alarm", "{}");
  sink.housekeeping(5'000'000'000);
  EXPECT_FALSE(log.pop(r)) << "one datagram is not yet a receiver back";
  for (int i = 0; i < 12; ++i) sink.send_event("alarm", "{}");
  sink.housekeeping(10'000'000'000);  // 3 s and 10 datagrams after the last refusal
  ASSERT_TRUE(log.pop(r));
  EXPECT_EQ(std::string(r.text), "output 127.0.0.1:" + std::to_string(port) + ": the receiver is back");
  const size_t arrived = drain(listener).size();
  EXPECT_GE(arrived, 12u);
  EXPECT_LE(arrived, 13u);
  EXPECT_EQ(counters.events_sent.load() - sent_before, arrived);
}

}  // namespace
}  // namespace vigil
