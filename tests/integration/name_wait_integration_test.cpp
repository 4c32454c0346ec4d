// Destination names that do not resolve yet when vigild starts (a machine just booted, its
// network or DNS not up): the real vigild and the real getaddrinfo in a user + network + mount
// namespace of the test's own. Built only where `unshare -rnm` works (tests/CMakeLists.txt checks
// at configure time), so it never skips.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../support/process.hpp"
#include "../support/temp_dir.hpp"

namespace vigil {
namespace {

using test::TempDir;

// Runs `script` (its stderr with its stdout, into `log`) in a user namespace of its own made with
// unshare's `flags` (-rn, -rnm); expects exit 0 and returns what it printed.
std::string run_unshared(const std::string& flags, const std::string& script, const std::string& log) {
  test::Process p({"/usr/bin/unshare", flags, "/bin/sh", "-c", "exec 2>&1; " + script}, log);
  const int st = p.wait(std::chrono::seconds(60));
  const std::string out = test::read_text(log);
  EXPECT_NE(st, -1) << out;
  EXPECT_EQ(st == -1 ? -1 : WEXITSTATUS(st), 0) << out;
  return out;
}

// vigild said each of `waits`, all before `then`, and stopped.
void expect_waited_before(const std::string& out, const std::vector<std::string>& waits, const std::string& then) {
  const size_t at = out.find(then);
  ASSERT_NE(at, std::string::npos) << out;
  for (const std::string& wait : waits) {
    const size_t w = out.find(wait);
    ASSERT_NE(w, std::string::npos) << wait << "\n" << out;
    EXPECT_LT(w, at) << out;
  }
  EXPECT_NE(out.find("vigild: stopped after"), std::string::npos) << out;
}

// A destination given by name on a machine whose network is not up yet (just booted): vigild
// waits for the name, saying so, instead of exiting (which systemd's start limit could make
// final), and starts once the name resolves. Real getaddrinfo in a network namespace of its own
// (no route to any DNS server: "try again"), with the name added to /etc/hosts by a bind mount
// 2 s later.
TEST(VigildNameWait, ADestinationNameNotResolvableYetIsWaitedFor) {
  TempDir dir("late-name");
  const std::string config =
      dir.write("vigil.yaml",
                "source: {kind: synthetic, rate_hz: 51200, channels: 1, chunk_frames: 1024}\n"
                "outputs:\n  - {kind: events, destination: \"vigil-late-name.test:4992\"}\n");
  const std::string hosts = dir.write("hosts", "127.0.0.1 localhost\n127.0.0.1 vigil-late-name.test\n");
  const std::string log = dir.file("vigild.log");
  const std::string script = std::string(VIGIL_BIN_DIR) + "/vigild --config " + config +
                             " --seconds 1 --log-interval 0 & sleep 2; mount --bind " + hosts +
                             " /etc/hosts; wait $!";
  const std::string out = run_unshared("-rnm", script, log);
  expect_waited_before(out, {"vigild: waiting for the name vigil-late-name.test to resolve ("},
                       "vigild: source synthetic 1 ch");
}

// The same name never resolving: a stop while vigild waits ends it at once.
TEST(VigildNameWait, AStopWhileWaitingForANameEndsVigild) {
  TempDir dir("never-name");
  const std::string config =
      dir.write("vigil.yaml",
                "source: {kind: synthetic, rate_hz: 51200, channels: 1, chunk_frames: 1024}\n"
                "outputs:\n  - {kind: events, destination: \"vigil-never-name.test:4992\"}\n");
  const std::string log = dir.file("vigild.log");
  test::Process p({"/usr/bin/unshare", "-rn", "/bin/sh", "-c",
                   "exec 2>&1; exec " + std::string(VIGIL_BIN_DIR) + "/vigild --config " + config},
                  log);
  for (int i = 0; i < 200 && test::read_text(log).find("waiting for the name") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(test::read_text(log).find("waiting for the name vigil-never-name.test"), std::string::npos)
      << test::read_text(log);
  p.signal(SIGTERM);
  const int st = p.wait(std::chrono::seconds(5));
  ASSERT_NE(st, -1) << "vigild did not stop while it waited";
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM) << st;
}

// --check-config looks up every host the config names, with the resolver vigild will use: a name
// that does not exist is an error at its line and column (exit 2: vigild would stop at it), one the
// resolver cannot answer for yet a warning (exit 0: vigild waits for it), --no-lookup skips both.
// In a namespace of its own: /etc/hosts knows one name; a second run has /etc/nsswitch.conf look
// in files only, so that the unknown name is "not found" instead of "try again" (no DNS reachable).
TEST(VigildNameWait, CheckConfigLooksUpTheNamesItGives) {
  TempDir dir("check-names");
  const std::string config = dir.write("vigil.yaml",
                                       "source: {kind: synthetic}\n"
                                       "outputs:\n"
                                       "  - {kind: events, destination: \"vigil-known.test:4992\"}\n"
                                       "  - {kind: vita49, stream: input, destination: \"vigil-unknown.test:4991\"}\n"
                                       "  - {kind: events, destination: \"vigil-unknown.test:4993\"}\n");
  const std::string hosts = dir.write("hosts", "127.0.0.1 localhost\n127.0.0.1 vigil-known.test\n");
  const std::string files_only = dir.write("nsswitch.conf", "hosts: files\n");
  const auto check = [&](const std::string& mounts, const std::string& flags, std::string& out) {
    const std::string log = dir.file("check.log");
    const std::string script = "mount --bind " + hosts + " /etc/hosts && " + mounts + std::string(VIGIL_BIN_DIR) +
                               "/vigild --check-config " + config + flags;
    test::Process p({"/usr/bin/unshare", "-rnm", "/bin/sh", "-c", "exec 2>&1; " + script}, log);
    const int st = p.wait(std::chrono::seconds(60));
    out = test::read_text(log);
    return st == -1 ? -1 : WEXITSTATUS(st);
  };
  std::string out;
  // No DNS server reachable: the unknown name cannot be answered for, a warning at each place.
  EXPECT_EQ(check("", "", out), 0) << out;
  EXPECT_NE(out.find(config + ":4:48: warning: outputs[1].destination: 'vigil-unknown.test' cannot be looked up now ("),
            std::string::npos) << out;
  EXPECT_NE(out.find("); vigild waits up to 120 s for it at start"), std::string::npos) << out;
  EXPECT_NE(out.find(config + ":5:33: warning: outputs[2].destination"), std::string::npos) << out;
  EXPECT_EQ(out.find("vigil-known.test"), std::string::npos) << out;
  EXPECT_NE(out.find(config + ": ok"), std::string::npos) << out;
  // The resolver says the name does not exist: an error, exit 2, no "ok".
  EXPECT_EQ(check("mount --bind " + files_only + " /etc/nsswitch.conf && ", "", out), 2) << out;
  EXPECT_NE(out.find(config + ":4:48: outputs[1].destination: cannot resolve 'vigil-unknown.test': "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(config + ":5:33: outputs[2].destination: cannot resolve"), std::string::npos) << out;
  EXPECT_EQ(out.find(": ok"), std::string::npos) << out;
  // --no-lookup: the file alone.
  EXPECT_EQ(check("mount --bind " + files_only + " /etc/nsswitch.conf && ", " --no-lookup", out), 0) << out;
  EXPECT_EQ(out, config + ": ok\n");
}

#ifdef VIGIL_TEST_IP
// metrics.listen and a multicast output's interface on an address this machine has not been given
// yet (DHCP not done at boot): vigild waits for the address, saying so, instead of failing its start,
// and --check-config warns. In a network namespace of its own whose loopback (up) gets 10.9.9.9 2 s
// later.
TEST(VigildNameWait, AnAddressNotOnThisMachineYetIsWaitedFor) {
  TempDir dir("late-address");
  const std::string config = dir.write(
      "vigil.yaml",
      "source: {kind: synthetic, rate_hz: 51200, channels: 1, chunk_frames: 1024}\n"
      "outputs:\n"
      "  - {kind: events, destination: \"239.255.0.9:4992\", multicast_interface: 10.9.9.9}\n"
      "metrics: {listen: \"10.9.9.9:9102\", allow_non_loopback: true}\n");
  const std::string vigild = std::string(VIGIL_BIN_DIR) + "/vigild";
  const std::string log = dir.file("vigild.log");
  const std::string script = VIGIL_TEST_IP " link set lo up; " + vigild + " --check-config " + config +
                             "; echo check-config exit $?; " + vigild + " --config " + config +
                             " --seconds 1 --log-interval 0 & sleep 2; " VIGIL_TEST_IP " addr add 10.9.9.9/32 dev lo; wait $!";
  const std::string out = run_unshared("-rn", script, log);
  EXPECT_NE(out.find(config + ":3:74: warning: outputs[0].multicast_interface: '10.9.9.9': not an address of this "
                              "machine yet (vigild waits up to 120 s for it at start)"),
            std::string::npos) << out;
  EXPECT_NE(out.find(config + ":4:19: warning: metrics.listen: '10.9.9.9': not an address of this machine yet ("),
            std::string::npos) << out;
  EXPECT_NE(out.find("check-config exit 0"), std::string::npos) << out;
  expect_waited_before(out,
                       {"vigild: waiting for the interface 10.9.9.9 that output 239.255.0.9:4992 sends from (not an "
                        "address of this machine yet), 0 of 120 s",
                        "vigild: waiting for metrics.listen 10.9.9.9 to be an address of this machine (not an address"},
                       "vigild: Prometheus metrics on http://10.9.9.9:9102/metrics");
}
#endif  // VIGIL_TEST_IP

#if defined(VIGIL_TEST_IP) && defined(VIGIL_TEST_VETH)
// A multicast output's interface that exists at start but is down, as a link is at boot until the
// network service brings it up: vigild waits for it, IPv4 and IPv6 alike, until a datagram can
// leave by it (for IPv6 that is also the second or two in which the link-local address is
// tentative), then sends everything with no send failing. Before, it started at once and its
// sends failed (counted) until the link came up. A veth pair in a user + network namespace.
TEST(VigildNameWait, AMulticastInterfaceThatIsDownYetIsWaitedFor) {
  TempDir dir("down-interface");
  const std::string config = dir.write(
      "vigil.yaml",
      "source: {kind: synthetic, rate_hz: 51200, channels: 1, chunk_frames: 1024}\n"
      "outputs:\n"
      "  - {kind: events, destination: \"239.255.0.9:4992\", multicast_interface: v0, status_interval_s: 0.2}\n"
      "  - {kind: events, destination: \"[ff02::1:9]:4993\", multicast_interface: v0, status_interval_s: 0.2}\n");
  const std::string vigild = std::string(VIGIL_BIN_DIR) + "/vigild";
  const std::string log = dir.file("vigild.log");
  const std::string script = VIGIL_TEST_IP " link add v0 type veth peer name v1; " + vigild + " --config " + config +
                             " --seconds 1 --log-interval 0 & sleep 2; " VIGIL_TEST_IP " link set v1 up; " VIGIL_TEST_IP
                             " link set v0 up; wait $!";
  const std::string out = run_unshared("-rn", script, log);
  expect_waited_before(out,
                       {"vigild: waiting for the interface v0 that output 239.255.0.9:4992 sends from (the interface "
                        "is down), 0 of 120 s",
                        "vigild: waiting for the interface v0 that output [ff02::1:9]:4993 sends from (the interface "
                        "is down)"},
                       "vigild: source synthetic 1 ch");
  // The last status line: every event datagram (a status every 0.2 s to both groups) went out.
  const size_t last = out.rfind("vigild: chunks in ");
  ASSERT_NE(last, std::string::npos) << out;
  EXPECT_NE(out.find("send errors 0 ", last), std::string::npos) << out.substr(last);
}
#endif  // VIGIL_TEST_IP && VIGIL_TEST_VETH

}  // namespace
}  // namespace vigil
