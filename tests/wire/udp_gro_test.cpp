// Receiving with UDP GRO on real loopback sockets: UdpSender's GSO sends arrive as one receive
// each, and cut at the segment size the kernel reports they are exactly the datagrams sent, in
// order; datagrams sent one by one still arrive one a receive. The cutting itself on its edges.
#include "wire/udp_gro.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "../support/udp_receiver.hpp"
#include "wire/udp_sender.hpp"

namespace vigil {
namespace {

struct Receive {
  std::vector<uint8_t> bytes;
  size_t segment = 0;
};

// One receive; empty bytes when nothing is waiting.
Receive receive(int fd) {
  Receive r;
  r.bytes.resize(65536);
  iovec iov{r.bytes.data(), r.bytes.size()};
  UdpGroControl control;
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
  const ssize_t n = recvmsg(fd, &msg, 0);
  r.bytes.resize(n > 0 ? size_t(n) : 0);
  r.segment = udp_gro_segment(msg);
  return r;
}

// Datagrams of random content: `runs` runs of `per_run` of `size` bytes, each closed by a shorter
// one (`size` / 3), as the output's lanes go; every datagram begins with its index.
std::vector<std::vector<uint8_t>> make_datagrams(size_t runs, size_t per_run, size_t size, std::mt19937& rng) {
  std::vector<std::vector<uint8_t>> out;
  for (size_t r = 0; r < runs; ++r)
    for (size_t i = 0; i < per_run; ++i) {
      std::vector<uint8_t> d(i + 1 == per_run ? size / 3 : size);
      for (auto& b : d) b = uint8_t(rng());
      const auto index = uint32_t(out.size());
      std::memcpy(d.data(), &index, 4);
      out.push_back(std::move(d));
    }
  return out;
}

size_t send_all(UdpSender& sender, const std::vector<std::vector<uint8_t>>& datagrams, size_t max_bytes) {
  DatagramBatch batch(datagrams.size(), max_bytes);
  for (const auto& d : datagrams) {
    std::memcpy(batch.next(), d.data(), d.size());
    batch.commit(d.size());
  }
  return sender.send_batch(batch).sent;
}

TEST(UdpGro, AGsoSendArrivesAsOneReceiveAndCutsIntoTheDatagramsSent) {
  std::mt19937 rng(std::random_device{}());
  test::UdpSocket receiver;
  ASSERT_TRUE(enable_udp_gro(receiver.fd)) << "this kernel has no UDP_GRO";
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  const size_t size = 2076;  // S2's VITA 49 packet of 512 samples
  const auto sent = make_datagrams(5, 20, size, rng);
  ASSERT_EQ(send_all(sender, sent, size), sent.size());
  ASSERT_TRUE(sender.segmenting());

  std::vector<std::vector<uint8_t>> got;
  size_t receives = 0;
  for (Receive r = receive(receiver.fd); !r.bytes.empty(); r = receive(receiver.fd)) {
    ++receives;
    EXPECT_EQ(r.segment, size) << "receive " << receives;
    const size_t count = udp_datagrams_in(r.bytes.size(), r.segment);
    size_t seen = 0;
    for_each_udp_datagram(r.bytes.data(), r.bytes.size(), r.segment,
                          [&](const uint8_t* p, size_t n) {
                            got.emplace_back(p, p + n);
                            ++seen;
                          });
    EXPECT_EQ(seen, count);
  }
  EXPECT_EQ(receives, 5u) << "one receive a run (one GSO send)";
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(got[i], sent[i]) << "datagram " << i;
}

TEST(UdpGro, DatagramsSentOneByOneArriveOneAReceive) {
  std::mt19937 rng(std::random_device{}());
  test::UdpSocket receiver;
  ASSERT_TRUE(enable_udp_gro(receiver.fd));
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(receiver.port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto sent = make_datagrams(1, 10, 1200, rng);
  for (const auto& d : sent)
    ASSERT_EQ(sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to), ssize_t(d.size()));
  close(fd);
  for (const auto& d : sent) {
    const Receive r = receive(receiver.fd);
    EXPECT_EQ(r.segment, 0u);
    EXPECT_EQ(udp_datagrams_in(r.bytes.size(), r.segment), 1u);
    ASSERT_EQ(r.bytes, d);
  }
  EXPECT_TRUE(receive(receiver.fd).bytes.empty());
}

// Without UDP_GRO the same GSO sends arrive datagram by datagram, and carry no segment size.
TEST(UdpGro, WithoutItTheKernelCutsTheSendsForTheReceiver) {
  std::mt19937 rng(std::random_device{}());
  test::UdpSocket receiver;
  boost::asio::io_context io;
  UdpSender sender(io, Endpoint{"127.0.0.1", receiver.port});
  const auto sent = make_datagrams(2, 20, 1000, rng);
  ASSERT_EQ(send_all(sender, sent, 1000), sent.size());
  for (const auto& d : sent) {
    const Receive r = receive(receiver.fd);
    EXPECT_EQ(r.segment, 0u);
    ASSERT_EQ(r.bytes, d);
  }
}

TEST(UdpGro, CuttingAtTheSegmentSizeKeepsAShortLastDatagramAndNothingElse) {
  std::vector<uint8_t> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = uint8_t(i * 7);
  struct Case {
    size_t bytes, segment;
    std::vector<size_t> sizes;
  };
  for (const Case& c : {Case{1000, 0, {1000}}, Case{1000, 250, {250, 250, 250, 250}}, Case{1000, 300, {300, 300, 300, 100}},
                        Case{1000, 1000, {1000}}, Case{999, 1000, {999}}, Case{301, 300, {300, 1}}, Case{0, 0, {0}}}) {
    std::vector<size_t> sizes;
    size_t at = 0;
    for_each_udp_datagram(buf.data(), c.bytes, c.segment, [&](const uint8_t* p, size_t n) {
      EXPECT_EQ(p, buf.data() + at);
      at += n;
      sizes.push_back(n);
    });
    EXPECT_EQ(sizes, c.sizes) << c.bytes << " / " << c.segment;
    EXPECT_EQ(udp_datagrams_in(c.bytes, c.segment), c.sizes.size()) << c.bytes << " / " << c.segment;
  }
}

}  // namespace
}  // namespace vigil
