// What a config asks of this machine's own network, asked of the real kernel: an address that is
// here binds, one that is not is "try again" (it may come with DHCP), and interfaces by name.
#include "wire/local_address.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vigil {
namespace {

// 192.0.2.0/24 is TEST-NET-1 (RFC 5737): documentation only, never an address of a machine.
constexpr const char* kNotHere = "192.0.2.77";

TEST(LocalAddress, AListenAddressIsHereWhenItCanBeBound) {
  std::string why;
  EXPECT_EQ(look_up_listen_address("127.0.0.1", why), NameLookup::kResolved) << why;
  EXPECT_EQ(look_up_listen_address("0.0.0.0", why), NameLookup::kResolved) << why;
  EXPECT_EQ(look_up_listen_address("localhost", why), NameLookup::kResolved) << why;
  why.clear();
  EXPECT_EQ(look_up_listen_address(kNotHere, why), NameLookup::kTryAgain);
  EXPECT_EQ(why, "not an address of this machine yet");
}

TEST(LocalAddress, AMulticastInterfaceIsHereByItsAddressOrItsName) {
  std::string why;
  EXPECT_EQ(look_up_interface("127.0.0.1", why), NameLookup::kResolved) << why;
  EXPECT_EQ(look_up_interface("lo", why), NameLookup::kResolved) << why;
  why.clear();
  EXPECT_EQ(look_up_interface(kNotHere, why), NameLookup::kTryAgain);
  EXPECT_EQ(why, "not an address of this machine yet");
  why.clear();
  EXPECT_EQ(look_up_interface("vigil-none0", why), NameLookup::kTryAgain);
  EXPECT_EQ(why, "no interface of that name here yet");
}

// With the group: a datagram to it can leave by that interface now (loopback is up and carries
// IPv4 multicast). The down and not-yet-ready cases need a link of the test's own:
// VigildNameWait.AMulticastInterfaceThatIsDownYetIsWaitedFor.
TEST(LocalAddress, AnInterfaceADatagramToTheGroupCanLeaveByIsReady) {
  std::string why;
  EXPECT_EQ(look_up_interface("lo", why, "239.255.0.9"), NameLookup::kResolved) << why;
  EXPECT_EQ(look_up_interface("127.0.0.1", why, "239.255.0.9"), NameLookup::kResolved) << why;
  why.clear();
  EXPECT_EQ(look_up_interface("vigil-none0", why, "239.255.0.9"), NameLookup::kTryAgain);
  EXPECT_EQ(why, "no interface of that name here yet");
}

}  // namespace
}  // namespace vigil
