// Soak (issue 7): the real vigild on a synthetic source at 20x real time for a long run, its
// output received on loopback and counted. Nominal load must lose nothing — no sequence gap in
// any stream or in the events, no dropped frame anywhere — and after warm-up the service's
// resident memory may grow by at most 1 MiB and its open file descriptors must not change.
// Not part of ctest (it takes minutes): scripts/soak.sh runs it; CI runs it for 60 s.
// VIGIL_SOAK_SECONDS (default 60) and VIGIL_SOAK_RATE_FACTOR (default 20) set the run.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/process.hpp"
#include "../support/graphs.hpp"
#include "../support/udp_receiver.hpp"
#include "../support/vigild_run.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}

// VmRSS in KiB and the number of open descriptors of a process.
uint64_t rss_kib(int pid) {
  std::istringstream in(test::read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}
size_t open_fds(int pid) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

TEST(Soak, NominalLoadLosesNothingAndHoldsMemoryAndDescriptors) {
  const double seconds = env_number("VIGIL_SOAK_SECONDS", 60), rate_factor = env_number("VIGIL_SOAK_RATE_FACTOR", 20);
  const fs::path dir = fs::temp_directory_path() / ("vigil-soak-" + std::to_string(getpid()));
  fs::create_directories(dir);
  test::UdpSocket data, events;
  // Two channels at 51.2 kHz (a vibration rig), every detector kind, the bands and the input out.
  std::ofstream(dir / "soak.yaml") << R"(source:
  kind: synthetic
  rate_hz: 51200
  channels: 2
  format: int16
  chunk_frames: 1024
  rate_factor: )" << rate_factor << R"(
  signals:
    - sines: [{freq_hz: 500, amplitude: 0.5}]
      noise_rms: 0.01
    - noise_rms: 0.01
      bursts: {amplitude: 0.8, freq_hz: 8000, decay_s: 0.002, rate_hz: 5}
# At 20x a chunk lasts 1 ms: the default 64 chunks are only 64 ms of buffering, less than a busy
# shared machine's occasional stall (CI once stalled 100 ms and 37 chunks were dropped). 256 chunks
# are 256 ms here, still less time than the default 64 give at real time (1.3 s).
pipeline: {pool_chunks: 256, output_slots: 256}
stages:
)" << test::bands_stages(test::BandsGraph().taps(255).level("level").window_s(0.1)) << R"(  - {name: hits, kind: ae_hits, input: input, threshold_db: 110, full_scale_v: 1, preamp_gain_db: 0,
     level_interval_s: 1}
outputs:
  - {kind: vita49, stream: input, destination: "127.0.0.1:)" << data.port << R"("}
  - {kind: vita49, stream: bands, destination: "127.0.0.1:)" << data.port << R"("}
  - {kind: events, destination: "127.0.0.1:)" << events.port << R"(", status_interval_s: 1}
)";
  test::VigildRun run(data, events, (dir / "soak.yaml").string(), (dir / "vigild.log").string(),
                     /*keep_timestamps=*/false);
  test::wait_for_start(run.received);
  // Samples every second; warm-up is the first quarter of the run (at least 5 s).
  std::vector<std::pair<uint64_t, size_t>> samples;  // RSS KiB, fds
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    samples.push_back({rss_kib(run.pid()), open_fds(run.pid())});
  }
  const int status = run.finish();
  fs::remove_all(dir);
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
  const test::Received& r = run.received;

  ASSERT_GE(samples.size(), 4u);
  const size_t warm = std::max<size_t>(samples.size() / 4, std::min<size_t>(5, samples.size() - 2));
  uint64_t rss_lo = UINT64_MAX, rss_hi = 0;
  for (size_t i = warm; i < samples.size(); ++i) {
    rss_lo = std::min(rss_lo, samples[i].first);
    rss_hi = std::max(rss_hi, samples[i].first);
    EXPECT_EQ(samples[i].second, samples[warm].second) << "open descriptors changed at " << i << " s";
  }
  EXPECT_LE(rss_hi - rss_lo, 1024u) << "resident memory grew by " << (rss_hi - rss_lo) << " KiB after warm-up";

  json final_status;
  for (const json& e : r.events)
    if (e["type"] == "status") final_status = e;
  ASSERT_TRUE(final_status.value("final", false));
  const uint64_t frames = final_status["frames_in"].get<uint64_t>();
  EXPECT_EQ(final_status["dropped_frames"], 0);
  EXPECT_EQ(final_status["output_dropped_frames"], 0);
  EXPECT_EQ(final_status["send_errors"], 0);
  EXPECT_EQ(final_status["events_dropped"], 0);
  EXPECT_EQ(final_status["frames_out"], frames);
  EXPECT_EQ(r.monitor.event_gaps(), 0u);
  EXPECT_EQ(r.malformed, 0u);
  ASSERT_EQ(r.monitor.streams().size(), 6u);  // 2 input channels, 2 bands x 2 channels
  for (const auto& [id, s] : r.monitor.streams()) {
    EXPECT_EQ(s.gaps, 0u) << std::hex << id;
    EXPECT_EQ(s.sample_loss_flags, 0u) << std::hex << id;
    EXPECT_EQ(s.samples, frames) << std::hex << id;
  }
  const double achieved = double(frames) / 51200.0 / seconds;
  std::printf("soak: %.0f s at %.0fx real time (achieved %.1fx), %llu frames, %zu streams, RSS %llu..%llu KiB after "
              "warm-up, %zu fds, deadline misses %llu, latency p99 %llu us\n",
              seconds, rate_factor, achieved, (unsigned long long)frames, r.monitor.streams().size(),
              (unsigned long long)rss_lo, (unsigned long long)rss_hi, samples.back().second,
              (unsigned long long)final_status["deadline_misses"].get<uint64_t>(),
              (unsigned long long)final_status["latency_us"]["p99"].get<uint64_t>());
}

}  // namespace
}  // namespace vigil
