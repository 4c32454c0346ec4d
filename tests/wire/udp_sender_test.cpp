// UdpSender's batches on real loopback sockets: every datagram arrives whole and in order; to a
// port nobody has bound, the kernel's refusal (ICMP port unreachable) is counted for the datagram
// that meets it and the rest of the batch still goes; the counters add up either way.
#include "wire/udp_sender.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "../support/udp_receiver.hpp"

namespace vigil {
namespace {

// Datagram i's size: varying (4..1399 bytes), or 1200 for all but every 64th (a shorter one
// closing each run: what the output's lanes look like, and what goes as one GSO send).
size_t size_of(uint32_t i, bool equal_runs) { return equal_runs ? (i % 64 == 63 ? 300 : 1200) : 4 + i * 37 % 1396; }

// n datagrams, each starting with its index.
void fill(DatagramBatch& batch, uint32_t n, uint32_t first, bool equal_runs = false) {
  batch.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const size_t bytes = size_of(first + i, equal_runs);
    uint8_t* p = batch.next();
    const uint32_t index = first + i;
    std::memcpy(p, &index, 4);
    for (size_t k = 4; k < bytes; ++k) p[k] = uint8_t(index + k);
    batch.commit(bytes, 1 + index % 3);  // items (a VRL frame's packets) are counted through
  }
}

void send_and_receive(bool equal_runs) {
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  DatagramBatch batch(UdpSender::kMaxBatch, 1472);
  uint32_t sent = 0;
  for (uint32_t round = 0; round < 10; ++round) {
    fill(batch, round == 9 ? 17 : 64, sent, equal_runs);
    size_t expect_bytes = 0, expect_items = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      expect_bytes += batch.bytes(i);
      expect_items += batch.items(i);
    }
    const UdpSender::BatchResult r = sender.send_batch(batch);
    ASSERT_EQ(r.sent, batch.size());
    ASSERT_EQ(r.bytes, expect_bytes);
    ASSERT_EQ(r.items, expect_items);
    ASSERT_GT(r.items, r.sent);
    sent += uint32_t(r.sent);
  }
  EXPECT_EQ(sender.counters().datagrams.load(), sent);
  EXPECT_EQ(sender.counters().failures(), 0u);
  uint8_t buf[2048];
  for (uint32_t i = 0; i < sent; ++i) {
    const ssize_t got = recv(receiver.fd, buf, sizeof buf, 0);
    ASSERT_EQ(got, ssize_t(size_of(i, equal_runs))) << "datagram " << i;
    uint32_t index = 0;
    std::memcpy(&index, buf, 4);
    ASSERT_EQ(index, i);
    for (ssize_t k = 4; k < got; ++k) ASSERT_EQ(buf[k], uint8_t(i + k)) << "datagram " << i << " byte " << k;
  }
  EXPECT_LT(recv(receiver.fd, buf, sizeof buf, 0), 0) << "more datagrams than were sent";
}

TEST(UdpSender, ABatchArrivesWholeAndInOrder) { send_and_receive(false); }

// Runs of equal size go as UDP GSO sends (Linux >= 4.18, which loopback supports): the receiver
// still gets each datagram on its own, whole and in order.
TEST(UdpSender, EqualSizeRunsAreSegmentedByTheKernelIntoTheSameDatagrams) {
  send_and_receive(true);
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  DatagramBatch batch(UdpSender::kMaxBatch, 1472);
  fill(batch, 64, 0, true);
  EXPECT_EQ(sender.send_batch(batch).sent, 64u);
  EXPECT_TRUE(sender.segmenting()) << "the kernel refused UDP GSO on loopback: " << sender.last_error();
}

// Where the kernel refuses to segment (here made to: a socket without UDP checksums cannot use
// GSO, EINVAL; elsewhere an old kernel, or segments above the route's MTU), the sender stops
// trying and sends the same datagrams one by one: nothing lost, nothing counted as failed.
TEST(UdpSender, WhereTheKernelCannotSegmentTheDatagramsGoOneByOne) {
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  const int on = 1;
  ASSERT_EQ(setsockopt(sender.native_handle(), SOL_SOCKET, SO_NO_CHECK, &on, sizeof on), 0);
  DatagramBatch batch(UdpSender::kMaxBatch, 1472);
  fill(batch, 64, 0, true);
  const UdpSender::BatchResult r = sender.send_batch(batch);
  EXPECT_EQ(r.sent, 64u);
  EXPECT_EQ(sender.counters().failures(), 0u);
  EXPECT_FALSE(sender.segmenting());
  uint8_t buf[2048];
  for (uint32_t i = 0; i < 64; ++i) {
    ASSERT_EQ(recv(receiver.fd, buf, sizeof buf, 0), ssize_t(size_of(i, true))) << i;
    uint32_t index = 0;
    std::memcpy(&index, buf, 4);
    ASSERT_EQ(index, i);
  }
}

// More datagrams than one sendmmsg call takes (kMaxBatch sends): they go in several calls.
TEST(UdpSender, ABatchLargerThanOneCallGoesInSeveral) {
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  DatagramBatch batch(3 * UdpSender::kMaxBatch, 1472);
  fill(batch, uint32_t(3 * UdpSender::kMaxBatch - 5), 0);
  EXPECT_EQ(sender.send_batch(batch).sent, batch.size());
  uint8_t buf[2048];
  for (uint32_t i = 0; i < batch.size(); ++i) {
    ASSERT_EQ(recv(receiver.fd, buf, sizeof buf, 0), ssize_t(size_of(i, false))) << i;
    uint32_t index = 0;
    std::memcpy(&index, buf, 4);
    ASSERT_EQ(index, i);
  }
}

// A run longer than one GSO send may carry (65000 bytes) is cut into several.
TEST(UdpSender, ALongRunIsCutIntoSeveralSends) {
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  DatagramBatch batch(UdpSender::kMaxBatch, 8972);
  for (int i = 0; i < 20; ++i) {  // 20 x 8972 bytes: three sends' worth
    uint8_t* p = batch.next();
    std::memset(p, i, 8972);
    batch.commit(8972);
  }
  EXPECT_EQ(sender.send_batch(batch).sent, 20u);
  std::vector<uint8_t> buf(65536);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(recv(receiver.fd, buf.data(), buf.size(), 0), 8972) << i;
    EXPECT_EQ(buf[0], uint8_t(i));
    EXPECT_EQ(buf[8971], uint8_t(i));
  }
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

// A multicast destination gets its hop limit, loop and interface as the socket's options; a
// group joined on loopback receives what is sent. A unicast destination keeps the defaults.
TEST(UdpSender, AMulticastDestinationGetsItsTtlLoopAndInterface) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0xEFFF0007);  // 239.255.0.7
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ip_mreqn join{};
  join.imr_multiaddr = a.sin_addr;
  join.imr_address.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join), 0) << std::strerror(errno);

  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"239.255.0.7", ntohs(a.sin_port)}, MulticastSettings{"127.0.0.1", 3, true});
  int value = -1;
  len = sizeof value;
  ASSERT_EQ(getsockopt(sender.native_handle(), IPPROTO_IP, IP_MULTICAST_TTL, &value, &len), 0);
  EXPECT_EQ(value, 3);
  ASSERT_EQ(getsockopt(sender.native_handle(), IPPROTO_IP, IP_MULTICAST_LOOP, &value, &len), 0);
  EXPECT_EQ(value, 1);
  in_addr via{};
  len = sizeof via;
  ASSERT_EQ(getsockopt(sender.native_handle(), IPPROTO_IP, IP_MULTICAST_IF, &via, &len), 0);
  EXPECT_EQ(ntohl(via.s_addr), INADDR_LOOPBACK);
  const uint32_t word = 0x5EED1234;
  ASSERT_TRUE(sender.send(&word, sizeof word)) << sender.last_error();
  uint32_t got = 0;
  for (int i = 0; i < 100 && recv(fd, &got, sizeof got, 0) < 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(got, word);
  close(fd);

  // No loop, TTL 0: as asked. An interface that does not exist: the error names it.
  UdpSender quiet(io, Endpoint{"239.255.0.7", 9}, MulticastSettings{"", 0, false});
  len = sizeof value;
  ASSERT_EQ(getsockopt(quiet.native_handle(), IPPROTO_IP, IP_MULTICAST_TTL, &value, &len), 0);
  EXPECT_EQ(value, 0);
  ASSERT_EQ(getsockopt(quiet.native_handle(), IPPROTO_IP, IP_MULTICAST_LOOP, &value, &len), 0);
  EXPECT_EQ(value, 0);
  try {
    UdpSender none(io, Endpoint{"239.255.0.7", 9}, MulticastSettings{"vigil-no-if0", 1, true});
    ADD_FAILURE() << "no error for an interface that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("output 239.255.0.7:9: multicast_interface 'vigil-no-if0': No such device"),
              std::string::npos) << e.what();
  }
  // A unicast destination: the options are not touched (the kernel's TTL 1 default for multicast).
  UdpSender unicast(io, Endpoint{"127.0.0.1", 9}, MulticastSettings{"", 7, false});
  len = sizeof value;
  ASSERT_EQ(getsockopt(unicast.native_handle(), IPPROTO_IP, IP_MULTICAST_TTL, &value, &len), 0);
  EXPECT_EQ(value, 1);
}

}  // namespace
}  // namespace vigil
