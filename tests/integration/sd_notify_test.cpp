// A stand-in for systemd: bind the notify socket, start the real vigild with NOTIFY_SOCKET,
// WATCHDOG_USEC and WATCHDOG_PID, and read what it says. Checks READY=1 after the first chunk,
// periodic WATCHDOG=1, no pings once the pipeline stalls (test-only fault setting), STATUS=,
// STOPPING=1 and exit 0 on SIGTERM.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../support/process.hpp"
#include "../support/graphs.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Message {
  double t_s;  // since vigild started
  std::string text;
};

class SdNotify : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-notify-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    socket_path_ = (dir_ / "notify.sock").string();
    fd_ = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_path_.c_str());
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    timeval tv{0, 20'000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void TearDown() override {
    close(fd_);
    fs::remove_all(dir_);
  }

  std::string config(double stall_after_s) {
    const fs::path p = dir_ / "vigil.yaml";
    std::ofstream(p) << "source: {kind: synthetic, rate_hz: 48000, channels: 2, chunk_frames: 480, rate_factor: 2,\n"
                     << "         signals: [{noise_rms: 0.1}]}\n"
                     << "pipeline: {pool_chunks: 16, test_stall_after_s: " << stall_after_s << "}\n"
                     << "stages:\n" << test::bands_stages(test::BandsGraph().taps(31).low_band_only().level(""));
    return p.string();
  }

  // Starts vigild as systemd would (WATCHDOG_PID is vigild's own PID, hence exec) and collects
  // messages for `seconds`.
  std::vector<Message> run(const std::string& cfg, double seconds, test::Process*& out_proc) {
    const std::string cmd = "NOTIFY_SOCKET=" + socket_path_ + " WATCHDOG_USEC=200000 exec sh -c 'WATCHDOG_PID=$$ exec " +
                            std::string(VIGIL_BIN_DIR) + "/vigild --config " + cfg + " --log-interval 0'";
    out_proc = new test::Process({"/bin/sh", "-c", cmd});
    return collect(seconds);
  }

  std::vector<Message> collect(double seconds) {
    std::vector<Message> got;
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    char buf[4096];
    while (Clock::now() < end) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n > 0) got.push_back({std::chrono::duration<double>(Clock::now() - t0_).count(), std::string(buf, size_t(n))});
    }
    return got;
  }

  static size_t count(const std::vector<Message>& m, const std::string& key, double from = 0, double to = 1e9) {
    size_t c = 0;
    for (const Message& x : m)
      if (x.t_s >= from && x.t_s < to && x.text.find(key) != std::string::npos) ++c;
    return c;
  }

  fs::path dir_;
  std::string socket_path_;
  int fd_ = -1;
  Clock::time_point t0_ = Clock::now();
};

TEST_F(SdNotify, ReadyThenWatchdogWhileHealthyThenStopping) {
  test::Process* p = nullptr;
  t0_ = Clock::now();
  std::vector<Message> m = run(config(0), 2.0, p);
  std::unique_ptr<test::Process> proc(p);
  ASSERT_FALSE(m.empty()) << "vigild sent nothing to NOTIFY_SOCKET";
  // More start time is asked for before the pipeline is prepared, then READY once it runs.
  EXPECT_NE(m.front().text.find("EXTEND_TIMEOUT_USEC=60000000"), std::string::npos) << m.front().text;
  ASSERT_GE(m.size(), 2u);
  EXPECT_NE(m[1].text.find("STATUS=starting"), std::string::npos) << m[1].text;
  ASSERT_EQ(count(m, "READY=1"), 1u);
  // A reload says RELOADING=1 (with MONOTONIC_USEC) and READY=1 again when done.
  proc->signal(SIGHUP);
  const std::vector<Message> reload = collect(0.5);
  EXPECT_EQ(count(reload, "RELOADING=1\nMONOTONIC_USEC="), 1u);
  EXPECT_EQ(count(reload, "READY=1"), 1u);
  // Pings every 100 ms (half of WATCHDOG_USEC) once running: ~15 in 2 s; at least 5 here.
  EXPECT_GE(count(m, "WATCHDOG=1"), 5u);
  EXPECT_GE(count(m, "STATUS=chunks in"), 1u);
  proc->signal(SIGTERM);
  const std::vector<Message> tail = collect(1.0);
  EXPECT_EQ(count(tail, "STOPPING=1"), 1u);
  const int st = proc->wait(std::chrono::seconds(5));
  ASSERT_NE(st, -1);
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST_F(SdNotify, PingsStopWhenThePipelineStalls) {
  test::Process* p = nullptr;
  t0_ = Clock::now();
  std::vector<Message> m = run(config(0.8), 3.0, p);
  std::unique_ptr<test::Process> proc(p);
  ASSERT_EQ(count(m, "READY=1"), 1u);
  // Anchor on what vigild reports, not on the wall clock (start-up time varies, e.g. under TSan):
  // the first STATUS that says STALLED.
  double ready_t = -1, stalled_t = -1;
  for (const Message& x : m) {
    if (ready_t < 0 && x.text.find("READY=1") != std::string::npos) ready_t = x.t_s;
    if (stalled_t < 0 && x.text.find("STATUS=STALLED") != std::string::npos) stalled_t = x.t_s;
  }
  ASSERT_GE(stalled_t, 0.0) << "STATUS never said STALLED";
  EXPECT_GE(stalled_t - ready_t, 0.6) << "stalled before the 0.8 s fault time";
  EXPECT_GE(count(m, "WATCHDOG=1", ready_t, stalled_t), 2u) << "pings while healthy";
  EXPECT_EQ(count(m, "WATCHDOG=1", stalled_t, 1e9), 0u) << "pings after the stall";
  proc->signal(SIGTERM);
  const int st = proc->wait(std::chrono::seconds(5));
  ASSERT_NE(st, -1);
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

}  // namespace
}  // namespace vigil
