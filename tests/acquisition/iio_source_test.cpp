// IioSource against a fake IIO device, for real: each test runs again in a private mount and
// network namespace (unshare -mn; root, as in CI), where tmpfs over /sys/bus holds iio:device0
// (name, sampling_frequency, in_voltage_scale, scan_elements/*_{en,index,type}, buffer/{enable,
// length,watermark}) and tmpfs over /dev a FIFO at /dev/iio:device0, fed by a generator that writes
// only the enabled channels while buffer/enable reads 1 (libiio then reads the FIFO with read()).
// Through the local: backend, and through Debian's real iiod over ip:127.0.0.1: every sample
// arrives, sign-extended and scaled exactly, at its time; a timestamp jump is frames lost; a device
// that goes away is reopened; what it cannot use is an error naming the device, channel, attribute.
#include "acquisition/iio_source.hpp"

#include <fcntl.h>
#include <signal.h>
#include <linux/limits.h>
#include <net/if.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "acquisition/chunk_pool.hpp"
#include "core/clock.hpp"
#include "wire/stream_id.hpp"
#include "../support/process.hpp"
#include "../support/vigild_run.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDevice = "/sys/bus/iio/devices/iio:device0";
constexpr const char* kScale = "0.000298023223876953125";  // mV a code: 10 V over 2^25, exact in binary
constexpr double kRate = 48000;
constexpr int64_t kT0 = 1'790'000'000'123'456'789;  // the first timestamp (realtime ns)

bool inside() { return std::getenv("VIGIL_IIO_NAMESPACE") != nullptr; }

// Outside: runs this test again in its own namespaces and reports its result. Inside: false.
bool ran_in_namespace() {
  if (inside()) return false;
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  char self[PATH_MAX] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) {
    ADD_FAILURE() << "cannot read /proc/self/exe";
    return true;
  }
  const std::string command = std::string("VIGIL_IIO_NAMESPACE=1 unshare -mn ") + self + " --gtest_filter=" +
                              t->test_suite_name() + "." + t->name() + " > /tmp/vigil-iio-" +
                              std::to_string(getpid()) + ".log 2>&1";
  const int rc = std::system(command.c_str());
  const std::string log = test::read_text("/tmp/vigil-iio-" + std::to_string(getpid()) + ".log");
  std::remove(("/tmp/vigil-iio-" + std::to_string(getpid()) + ".log").c_str());
  EXPECT_EQ(rc, 0) << log;
  EXPECT_NE(log.find("[  PASSED  ] 1 test"), std::string::npos) << log;
  return true;
}

#define IN_ITS_NAMESPACE()                                                                                \
  if (!inside() && geteuid() != 0)                                                                        \
    GTEST_SKIP() << "not root: this test needs a private mount namespace (unshare -mn) to put a fake IIO " \
                    "device in sysfs; CI runs it as root";                                                \
  if (ran_in_namespace()) return

void put(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << "\n";
}
std::string get(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s, '\n');
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

struct ChannelFile {
  std::string id, type;
  int index;
  std::string scale;  // "" : the shared in_voltage_scale
};

// The fake device: sysfs files, the FIFO, and the loopback up (for iiod).
void make_device(const std::vector<ChannelFile>& channels, bool with_timestamp) {
  signal(SIGPIPE, SIG_IGN);  // a write to a FIFO or socket whose reader left fails, not kills
  ASSERT_EQ(mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  const std::string save = "/tmp/vigil-iio-dev-" + std::to_string(getpid());
  fs::create_directories(save);
  ASSERT_EQ(mount("/dev", save.c_str(), nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(mount("none", "/sys/bus", "tmpfs", 0, nullptr), 0) << std::strerror(errno);
  const std::string d = kDevice;
  fs::create_directories(d + "/scan_elements");
  fs::create_directories(d + "/buffer");
  put(d + "/name", "adc0");
  put(d + "/sampling_frequency", "32000");
  put(d + "/in_voltage_scale", kScale);
  for (const ChannelFile& c : channels) {
    put(d + "/scan_elements/in_" + c.id + "_en", "0");
    put(d + "/scan_elements/in_" + c.id + "_index", std::to_string(c.index));
    put(d + "/scan_elements/in_" + c.id + "_type", c.type);
    if (!c.scale.empty()) put(d + "/in_" + c.id + "_scale", c.scale);
  }
  if (with_timestamp) {
    put(d + "/scan_elements/in_timestamp_en", "0");
    put(d + "/scan_elements/in_timestamp_index", "9");
    put(d + "/scan_elements/in_timestamp_type", "le:s64/64>>0");
  }
  put(d + "/buffer/enable", "0");
  put(d + "/buffer/length", "4096");
  put(d + "/buffer/watermark", "1");
  ASSERT_EQ(mount("none", "/dev", "tmpfs", 0, "mode=755"), 0) << std::strerror(errno);
  for (const char* n : {"null", "zero", "urandom", "random"}) {
    put(std::string("/dev/") + n, "");
    ASSERT_EQ(mount((save + "/" + n).c_str(), (std::string("/dev/") + n).c_str(), nullptr, MS_BIND, nullptr), 0);
  }
  ASSERT_EQ(mkfifo("/dev/iio:device0", 0666), 0) << std::strerror(errno);
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  ifreq r{};
  std::strcpy(r.ifr_name, "lo");
  ioctl(s, SIOCGIFFLAGS, &r);
  r.ifr_flags |= IFF_UP;
  ASSERT_EQ(ioctl(s, SIOCSIFFLAGS, &r), 0) << std::strerror(errno);
  close(s);
}

// Sample k of a channel: random 24-bit codes, with both full scales among them.
int32_t raw24(int index, uint64_t k) {
  if (k % 1000 == 7) return (1 << 23) - 1;
  if (k % 1000 == 8) return -(1 << 23);
  return int32_t(std::mt19937(uint32_t(index * 7919 + k))() % (1u << 24)) - (1 << 23);
}

// Writes frames while buffer/enable is 1, each pass of enabling from where the last stopped:
// the enabled channels in index order, be:s24/32>>8 (or be:s12/16>>4), and the timestamp
// (le:s64, aligned to 8) of frame k + the jump from frame jump_at on.
class Generator {
 public:
  // paced: at the rate, as a device writes (otherwise as fast as the reader takes it).
  Generator(std::vector<ChannelFile> channels, uint64_t frames_a_pass, uint64_t passes, uint64_t jump_at = 0,
            uint64_t jump_frames = 0, bool paced = false)
      : channels_(std::move(channels)) {
    thread_ = std::thread([=, this] {
      const int64_t start = mono_now_ns();
      uint64_t k = 0;
      for (uint64_t pass = 0; pass < passes && !stop_; ++pass) {
        while (!stop_ && get(std::string(kDevice) + "/buffer/enable") != "1")
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (stop_) return;
        std::vector<const ChannelFile*> on;
        for (const ChannelFile& c : channels_)
          if (get(std::string(kDevice) + "/scan_elements/in_" + c.id + "_en") == "1") on.push_back(&c);
        std::sort(on.begin(), on.end(), [](auto* a, auto* b) { return a->index < b->index; });
        const bool ts = fs::exists(std::string(kDevice) + "/scan_elements/in_timestamp_en") &&
                        get(std::string(kDevice) + "/scan_elements/in_timestamp_en") == "1";
        const int fd = ::open("/dev/iio:device0", O_WRONLY);
        if (fd < 0) return;
        // Writes that wait for the reader give way to stop_: a reader that keeps the FIFO open
        // but no longer reads (iiod after its client left) must not hold the destructor's join.
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        std::vector<uint8_t> out;
        for (uint64_t n = 0; n < frames_a_pass && !stop_; ++n, ++k) {
          for (const ChannelFile* c : on) {
            if (c->type == "be:s12/16>>4") {
              const uint16_t v = uint16_t(int16_t(raw24(c->index, k) >> 12) << 4);
              out.push_back(uint8_t(v >> 8));
              out.push_back(uint8_t(v));
              continue;
            }
            const uint32_t v = uint32_t(raw24(c->index, k)) << 8;
            for (int b = 3; b >= 0; --b) out.push_back(uint8_t(v >> (8 * b)));
          }
          if (ts) {
            while (out.size() % 8) out.push_back(0);
            const int64_t t = kT0 + frames_to_ns(k + (k >= jump_at && jump_frames ? jump_frames : 0), kRate);
            for (int b = 0; b < 8; ++b) out.push_back(uint8_t(uint64_t(t) >> (8 * b)));
          }
          if (out.size() >= 8192 || (paced && k % 256 == 255)) {
            if (!write_all(fd, out)) break;
            out.clear();
            if (paced) sleep_until_mono_ns(start + frames_to_ns(k + 1, kRate));
          }
        }
        if (!out.empty()) (void)write_all(fd, out);
        ::close(fd);
        written_ = k;
        if (pass + 1 == passes) break;
        // Between passes the device goes away (its node and its sysfs folder) and comes back.
        ::unlink("/dev/iio:device0");
        fs::rename(kDevice, std::string(kDevice) + ".gone");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        fs::rename(std::string(kDevice) + ".gone", kDevice);
        put(std::string(kDevice) + "/buffer/enable", "0");
        ::mkfifo("/dev/iio:device0", 0666);
      }
    });
  }
  ~Generator() {
    stop_ = true;
    const int fd = ::open("/dev/iio:device0", O_RDONLY | O_NONBLOCK);  // a writer blocked in open() goes on
    thread_.join();
    if (fd >= 0) ::close(fd);
  }

 private:
  // All of `out` into the non-blocking FIFO, waiting for room while not stopped.
  bool write_all(int fd, const std::vector<uint8_t>& out) {
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
      if (n > 0) {
        done += size_t(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN) return false;  // the reader left (EPIPE)
      if (stop_) return false;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 50);
    }
    return true;
  }

  std::vector<ChannelFile> channels_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> written_{0};
  std::thread thread_;
};

const std::vector<ChannelFile> kChannels = {
    {"voltage0", "be:s24/32>>8", 0, ""}, {"voltage1", "be:s24/32>>8", 1, ""}, {"voltage2", "be:s24/32>>8", 2, ""}};

IioSourceSpec spec_for(const std::string& uri, std::vector<std::string> channels) {
  IioSourceSpec s;
  s.uri = uri;
  s.device = "adc0";
  s.channels = std::move(channels);
  s.sample_rate_hz = kRate;
  s.chunk_frames = 1024;
  // Without a timestamp channel a refill later than kernel_buffers periods is frames lost (the
  // device's buffers would have overflowed). These tests feed every sample, so a stall of the
  // reader must not read as a loss: 16 buffers allow 341 ms (a sanitizer build under load once
  // stalled 44 ms, past the 2 buffers' 43 ms, and iiod's test saw 2101 frames "lost").
  s.kernel_buffers = 16;
  return s;
}

// The next chunk, or kIdle if none came within `wait` (a device or iiod that stopped delivering
// fails the test, named, instead of hanging it).
ReadStatus read_within(IioSource& src, Chunk& c, std::chrono::seconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  ReadStatus st;
  while ((st = src.read(c)) == ReadStatus::kIdle && std::chrono::steady_clock::now() < until) {
  }
  return st;
}

// Reads `chunks` chunks and checks every sample of the listed channel indexes (in that order).
void expect_every_sample(IioSource& src, const std::vector<int>& indexes, int chunks) {
  ChunkPool pool(2, 1024 * indexes.size() * 4);
  Chunk& c = pool.chunk(0);
  EXPECT_EQ(src.format().format, SampleFormat::kInt32);
  EXPECT_EQ(src.format().scale, float(0.000298023223876953125 / 1000.0 / 256.0));  // volts a left-justified code
  EXPECT_EQ(src.format().rate_hz, kRate);
  int64_t t_first = 0;
  for (int n = 0; n < chunks; ++n) {
    c.header = {};
    const ReadStatus st = read_within(src, c, std::chrono::seconds(20));
    ASSERT_EQ(st, ReadStatus::kOk) << "chunk " << n;
    ASSERT_EQ(c.header.first_frame, uint64_t(n) * 1024);
    ASSERT_EQ(c.header.frames, 1024u);
    ASSERT_EQ(c.header.frames_lost_before, 0u);
    if (n == 0) t_first = c.header.t_first_utc_ns;
    EXPECT_EQ(c.header.t_first_utc_ns, t_first + frames_to_ns(uint64_t(n) * 1024, kRate));
    const auto* d = reinterpret_cast<const int32_t*>(c.data);
    for (uint32_t f = 0; f < 1024; ++f)
      for (size_t i = 0; i < indexes.size(); ++i) {
        const uint64_t k = uint64_t(n) * 1024 + f;
        // Sign-extended by libiio, left-justified here: the 24-bit code times 256.
        ASSERT_EQ(d[f * indexes.size() + i], int32_t(uint32_t(raw24(indexes[i], k)) << 8))
            << "frame " << k << " channel voltage" << indexes[i];
      }
  }
}

TEST(IioSource, EverySampleThroughTheLocalBackendSignExtendedAndScaled) {
  IN_ITS_NAMESPACE();
  make_device(kChannels, false);
  Generator gen(kChannels, 1 << 20, 1);
  IioSource src(spec_for("local:", {"voltage2", "voltage0"}));  // in the list's order, voltage1 left off
  EXPECT_EQ(get(std::string(kDevice) + "/sampling_frequency"), "48000");  // written, read back
  EXPECT_EQ(src.format().channels, 2u);
  expect_every_sample(src, {2, 0}, 8);
  EXPECT_NE(src.description().find("scale 0.000298023223876953125 mV"), std::string::npos) << src.description();
}

TEST(IioSource, EverySampleThroughIiodOverIp) {
  IN_ITS_NAMESPACE();
  make_device(kChannels, false);
  Generator gen(kChannels, 1 << 20, 1);
  test::Process iiod({"/usr/sbin/iiod"});
  bool up = false;
  for (int i = 0; i < 100 && !up; ++i) {  // until it answers on its port
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(30431);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    up = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(s);
  }
  ASSERT_TRUE(up) << "iiod did not listen on 30431";
  IioSource src(spec_for("ip:127.0.0.1", {"voltage0", "voltage1", "voltage2"}));
  expect_every_sample(src, {0, 1, 2}, 6);
  // The scale, read as the attribute's text, kept every digit (%f would give 0.000298).
  EXPECT_NE(src.description().find("scale 0.000298023223876953125 mV"), std::string::npos) << src.description();
}

TEST(IioSource, ATimestampJumpIsExactlyThoseFramesLostFlaggedAsAnOverrun) {
  IN_ITS_NAMESPACE();
  make_device(kChannels, true);
  Generator gen(kChannels, 1 << 20, 1, 4096, 300);  // from frame 4096 the timestamps run 300 frames ahead
  IioSource src(spec_for("local:", {"voltage1"}));
  ChunkPool pool(2, 1024 * 4);
  Chunk& c = pool.chunk(0);
  uint64_t next = 0;
  for (int n = 0; n < 6; ++n) {
    c.header = {};
    const ReadStatus st = read_within(src, c, std::chrono::seconds(20));
    ASSERT_EQ(st, ReadStatus::kOk);
    const ChunkHeader& h = c.header;
    if (n == 0) {
      EXPECT_EQ(h.t_first_utc_ns, kT0);  // the timestamp channel's time (realtime)
    }
    EXPECT_EQ(h.frames_lost_before, n == 4 ? 300u : 0u) << "chunk " << n;
    EXPECT_EQ(bool(h.flags & chunk_flags::kOverrunBefore), n == 4) << "chunk " << n;
    EXPECT_EQ(h.first_frame, next + h.frames_lost_before);
    EXPECT_EQ(h.t_first_utc_ns, kT0 + frames_to_ns(h.first_frame, kRate));
    next = h.first_frame + h.frames;
    const auto* d = reinterpret_cast<const int32_t*>(c.data);
    const uint64_t k0 = uint64_t(n) * 1024;  // the generator's frame: the lost ones were never data
    for (uint32_t f = 0; f < 1024; ++f) ASSERT_EQ(d[f], int32_t(uint32_t(raw24(1, k0 + f)) << 8)) << k0 + f;
  }
  EXPECT_EQ(src.overruns(), 1u);
}

// Without a timestamp channel, a refill later than the kernel buffers could have held is frames
// lost: about as many as it came late, counted once and flagged (a device's buffers overflow
// while nobody reads; this FIFO keeps them, so the samples after it are still the next ones).
TEST(IioSource, ARefillLaterThanTheKernelBuffersHoldIsFramesLostFlaggedAsAnOverrun) {
  IN_ITS_NAMESPACE();
  make_device(kChannels, false);
  Generator gen(kChannels, 1 << 20, 1, 0, 0, true);  // paced, as a device writes
  IioSourceSpec s = spec_for("local:", {"voltage0"});
  s.kernel_buffers = 2;  // 43 ms
  IioSource src(s);
  ChunkPool pool(2, 1024 * 4);
  Chunk& c = pool.chunk(0);
  const int64_t period = frames_to_ns(1024, kRate);
  int64_t last_return = 0, t0 = 0;
  for (int n = 0; n < 8; ++n) {  // at the device's pace, the time line settles
    c.header = {};
    ASSERT_EQ(read_within(src, c, std::chrono::seconds(20)), ReadStatus::kOk) << "chunk " << n;
    last_return = mono_now_ns();
    if (n == 0) t0 = c.header.t_first_utc_ns;
  }
  const uint64_t gaps_before = src.overruns(), next = c.header.first_frame + c.header.frames;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.header = {};
  ASSERT_EQ(read_within(src, c, std::chrono::seconds(20)), ReadStatus::kOk);
  const int64_t late = c.header.t_capture_mono_ns - last_return;  // at most this late
  const ChunkHeader& h = c.header;
  EXPECT_TRUE(h.flags & chunk_flags::kOverrunBefore);
  EXPECT_TRUE(h.flags & chunk_flags::kSourceOverrun);
  EXPECT_EQ(src.overruns(), gaps_before + 1);
  // Its chunk was due a period after the last one came; a period more for the scheduling of both.
  EXPECT_GE(double(h.frames_lost_before), double(500'000'000 - 2 * period) * kRate / 1e9);
  EXPECT_LE(double(h.frames_lost_before), double(late) * kRate / 1e9);
  EXPECT_EQ(h.first_frame, next + h.frames_lost_before);
  EXPECT_EQ(h.t_first_utc_ns, t0 + frames_to_ns(h.first_frame, kRate));  // the time line moved with it
  const auto* d = reinterpret_cast<const int32_t*>(c.data);
  for (uint32_t f = 0; f < 1024; ++f) ASSERT_EQ(d[f], int32_t(uint32_t(raw24(0, 8 * 1024 + f)) << 8)) << f;
}

TEST(IioSource, ADeviceThatGoesAwayIsReopenedAndItsOutageFlagged) {
  IN_ITS_NAMESPACE();
  make_device(kChannels, false);
  Generator gen(kChannels, 2048, 2);  // two passes of 2048 frames; the FIFO closes after each
  IioSource src(spec_for("local:", {"voltage0"}));
  ChunkPool pool(2, 1024 * 4);
  Chunk& c = pool.chunk(0);
  int ok = 0, errors = 0;
  bool resumed = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ok < 4 && std::chrono::steady_clock::now() < until) {
    c.header = {};
    const ReadStatus st = src.read(c);
    if (st == ReadStatus::kError) {
      ++errors;
      EXPECT_TRUE(src.down());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (st != ReadStatus::kOk) continue;
    if (ok == 2) {
      resumed = c.header.flags & chunk_flags::kSourceResumed;
      EXPECT_TRUE(c.header.flags & chunk_flags::kOverrunBefore);
    }
    ++ok;
  }
  EXPECT_EQ(ok, 4);
  EXPECT_GE(errors, 1);
  EXPECT_TRUE(resumed);
  EXPECT_FALSE(src.down());
  std::map<std::string, uint64_t> counts;
  for (const auto& [name, v] : src.counts()) counts[name] = v;
  EXPECT_EQ(counts["reopens"], 1u);
}

// The real vigild on the fake device: every sample of its VITA 49 output is the device's code,
// sign-extended, left-justified and scaled to volts by the scale attribute, as the source promised.
TEST(IioSource, VigildCapturesTheDeviceAndSendsEverySampleInVolts) {
  IN_ITS_NAMESPACE();
  make_device(kChannels, false);
  Generator gen(kChannels, 1 << 20, 1, 0, 0, true);
  test::UdpSocket data, events;
  const std::string config = "/tmp/vigil-iio-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(config) << "source:\n  kind: iio\n  device: iio:device0\n  channels: [voltage1, voltage2]\n"
                           "  sample_rate_hz: 48000\n  chunk_frames: 512\n"
                        << test::room_for_stalls() << "outputs:\n  - kind: vita49\n    stream: input\n"
                        << "    destination: 127.0.0.1:" << data.port << "\n  - kind: events\n"
                        << "    destination: 127.0.0.1:" << events.port << "\n";
  test::VigildRun run(data, events, config, config + ".log", true, true);
  run.run_for(1000);
  ASSERT_EQ(run.finish(SIGTERM), 0) << run.log;
  EXPECT_NE(run.log.find("IIO local: iio:device0: 2 channels (voltage1) at 48000 Hz, scale " + std::string(kScale) +
                         " mV, times from the refills"),
            std::string::npos)
      << run.log;
  const float scale = float(0.000298023223876953125 / 1000.0 / 256.0);
  for (uint32_t c = 0; c < 2; ++c) {
    const std::vector<float>& got = run.received.samples[stream_id(0, 0, c)];
    ASSERT_GE(got.size(), 24000u) << "channel " << c;  // half a second at least
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_EQ(got[k], float(int32_t(uint32_t(raw24(int(c) + 1, k)) << 8)) * scale) << "channel " << c << " frame " << k;
  }
  std::remove(config.c_str());
}

TEST(IioSource, WhatItCannotUseIsAnErrorNamingDeviceChannelAndAttribute) {
  IN_ITS_NAMESPACE();
  std::vector<ChannelFile> channels = kChannels;
  channels.push_back({"voltage3", "be:u12/16>>4", 3, ""});
  channels.push_back({"voltage4", "be:s24/32>>8", 4, "0.5"});
  channels.push_back({"voltage5", "be:s12/16>>4", 5, ""});
  make_device(channels, false);
  auto message = [](IioSourceSpec s) {
    try {
      IioSource src(s);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  IioSourceSpec s = spec_for("local:", {"voltage0"});
  s.device = "adc9";
  EXPECT_EQ(message(s), "iio source local:: no device 'adc9' (there are: iio:device0 (adc0))");
  s = spec_for("local:", {"voltage0", "voltage7"});
  EXPECT_NE(message(s).find("iio source local: device adc0: no input channel 'voltage7' (it has: voltage0, voltage1, "
                            "voltage2, voltage3, voltage4, voltage5)"),
            std::string::npos)
      << message(s);
  s = spec_for("local:", {"voltage3"});
  EXPECT_EQ(message(s), "iio source local: device adc0 channel voltage3: unsigned samples (be:u12/16>>4) are not supported");
  s = spec_for("local:", {"voltage0", "voltage4"});
  EXPECT_EQ(message(s), std::string("iio source local: device adc0 channel voltage4: attribute scale reads 0.5, but "
                                    "voltage0's reads ") + kScale + ": every channel of one source needs the same scale");
  s = spec_for("local:", {"voltage0", "voltage5"});
  EXPECT_NE(message(s).find("channel voltage5: be:s12/16>>4 samples, but voltage0 has samples of the other size class"),
            std::string::npos)
      << message(s);
  // A 12-bit channel alone arrives as int16, left-justified, and the scale follows.
  s = spec_for("local:", {"voltage5"});
  IioSource twelve(s);
  EXPECT_EQ(twelve.format().format, SampleFormat::kInt16);
  EXPECT_EQ(twelve.format().scale, float(0.000298023223876953125 / 1000.0 / 16.0));
}

}  // namespace
}  // namespace vigil
