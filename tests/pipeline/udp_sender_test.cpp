// UdpSender's batches on real loopback sockets: every datagram arrives whole and in order; to a
// port nobody has bound, the kernel's refusal (ICMP port unreachable) is counted for the datagram
// that meets it and the rest of the batch still goes; the counters add up either way.
#include "pipeline/udp_sender.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "../support/udp_receiver.hpp"

namespace vigil {
namespace {

// n datagrams of 1..1400 bytes, each starting with its index.
void fill(DatagramBatch& batch, uint32_t n, uint32_t first) {
  batch.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const size_t bytes = 4 + (first + i) * 37 % 1396;
    uint8_t* p = batch.next();
    const uint32_t index = first + i;
    std::memcpy(p, &index, 4);
    for (size_t k = 4; k < bytes; ++k) p[k] = uint8_t(index + k);
    batch.commit(bytes);
  }
}

TEST(UdpSender, ABatchArrivesWholeAndInOrder) {
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  DatagramBatch batch(64, 1472);
  uint32_t sent = 0;
  size_t bytes = 0;
  for (uint32_t round = 0; round < 10; ++round) {
    fill(batch, round == 9 ? 17 : 64, sent);
    size_t expect_bytes = 0;
    for (size_t i = 0; i < batch.size(); ++i) expect_bytes += batch.bytes(i);
    const UdpSender::BatchResult r = sender.send_batch(batch);
    ASSERT_EQ(r.sent, batch.size());
    ASSERT_EQ(r.bytes, expect_bytes);
    sent += uint32_t(r.sent);
    bytes += r.bytes;
  }
  EXPECT_EQ(sender.counters().datagrams.load(), sent);
  EXPECT_EQ(sender.counters().failures(), 0u);
  uint8_t buf[2048];
  for (uint32_t i = 0; i < sent; ++i) {
    const ssize_t got = recv(receiver.fd, buf, sizeof buf, 0);
    ASSERT_EQ(got, ssize_t(4 + i * 37 % 1396)) << "datagram " << i;
    uint32_t index = 0;
    std::memcpy(&index, buf, 4);
    ASSERT_EQ(index, i);
    for (ssize_t k = 4; k < got; ++k) ASSERT_EQ(buf[k], uint8_t(i + k)) << "datagram " << i << " byte " << k;
  }
  EXPECT_LT(recv(receiver.fd, buf, sizeof buf, 0), 0) << "more datagrams than were sent";
}

TEST(UdpSender, ARefusedDatagramIsCountedAndTheRestOfTheBatchGoes) {
  uint16_t port = 0;
  {
    test::UdpSocket probe;  // a free port, closed again: nobody listens there
    port = probe.port;
  }
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", port});
  DatagramBatch batch(64, 1472);
  size_t sent = 0, attempted = 0;
  // Up to 2 s: the kernel rate-limits its ICMP replies.
  for (int round = 0; round < 400 && sender.counters().refused.load() < 3; ++round) {
    fill(batch, 64, uint32_t(attempted));
    const UdpSender::BatchResult r = sender.send_batch(batch);
    sent += r.sent;
    attempted += batch.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the ICMP replies come back meanwhile
  }
  const SendCounters& c = sender.counters();
  SCOPED_TRACE("attempted " + std::to_string(attempted) + ", sent " + std::to_string(sent) + ", refused " +
               std::to_string(c.refused.load()) + ", buffer full " + std::to_string(c.buffer_full.load()) + ", other " +
               std::to_string(c.other.load()) + " (last: " + sender.last_error() + ")");
  EXPECT_GE(c.refused.load(), 3u);
  EXPECT_EQ(c.datagrams.load(), sent);
  EXPECT_EQ(c.datagrams.load() + c.failures(), attempted) << "a datagram neither sent nor counted";
  EXPECT_GT(sent, c.refused.load()) << "a refusal stopped the rest of its batch";
}

}  // namespace
}  // namespace vigil
