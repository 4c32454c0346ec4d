// The real vigild capturing from ALSA (real libasound, its `file` PCM reading a raw file of known
// S16_LE samples through ALSA_CONFIG_PATH), with vigil-listen --record on loopback: the `input`
// stream carries exactly the file's samples, channel by channel.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "../support/process.hpp"
#include "../support/ports.hpp"

namespace vigil {
namespace {

namespace fs = std::filesystem;

TEST(AlsaIntegration, InputStreamCarriesExactlyTheDeviceSamples) {
  const fs::path dir = fs::temp_directory_path() / ("vigil-alsa-it-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const uint32_t channels = 2, frames = 48000;  // 1 s at 48 kHz
  std::vector<int16_t> raw(size_t(frames) * channels);
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> d(-32768, 32767);
  for (auto& v : raw) v = int16_t(d(rng));
  std::ofstream(dir / "in.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(raw.data()), std::streamsize(raw.size() * sizeof(int16_t)));
  // ALSA_CONFIG_PATH replaces alsa.conf: a self-contained configuration (the slave inline).
  std::ofstream(dir / "asound.conf") << "pcm.rig {\n type file\n slave { pcm { type null } }\n file \"/dev/null\"\n infile \""
                                     << (dir / "in.raw").string() << "\"\n format \"raw\"\n}\n";
  const uint16_t data_port = test::free_udp_port(), event_port = test::free_udp_port();
  std::ofstream(dir / "vigil.yaml") << "source:\n  kind: alsa\n  device: rig\n  rate_hz: 48000\n  channels: 2\n"
                                    << "  format: S16_LE\n  period_frames: 480\n  buffer_frames: 1920\n  duration_s: 1.0\n"
                                    << "pipeline: {pool_chunks: 128, output_slots: 128}  # the file PCM is unpaced: room for all 100 periods\n"
                                    << "outputs:\n  - {kind: vita49, stream: input, destination: \"127.0.0.1:" << data_port
                                    << "\"}\n  - {kind: events, destination: \"127.0.0.1:" << event_port << "\"}\n";
  const std::string listen_bin = std::string(VIGIL_BIN_DIR) + "/vigil-listen";
  test::Process listen({listen_bin, "--data-port", std::to_string(data_port), "--event-port", std::to_string(event_port),
                        "--record", (dir / "rec").string(), "--quiet", "--seconds", "30"},
                       (dir / "listen.txt").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  setenv("ALSA_CONFIG_PATH", (dir / "asound.conf").c_str(), 1);
  const std::string log = (dir / "vigild.log").string();
  test::Process vigild({"/bin/sh", "-c", "exec " + std::string(VIGIL_BIN_DIR) + "/vigild --config " +
                                             (dir / "vigil.yaml").string() + " --log-interval 0 2>" + log});
  unsetenv("ALSA_CONFIG_PATH");
  const int status = vigild.wait(std::chrono::seconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  listen.signal(SIGINT);
  listen.wait(std::chrono::seconds(5));
  const std::string log_text = test::read_text(log);
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << log_text;
  EXPECT_NE(log_text.find("ALSA 'rig': asked S16_LE 2 ch 48000 Hz, period 480, buffer 1920; granted 48000 Hz"),
            std::string::npos) << log_text;
  for (uint32_t c = 0; c < channels; ++c) {
    SCOPED_TRACE(c);
    const fs::path rec = dir / "rec" / ("stream-0000000" + std::to_string(c) + ".f32");
    ASSERT_TRUE(fs::exists(rec));
    std::vector<float> got(fs::file_size(rec) / sizeof(float));
    std::ifstream(rec, std::ios::binary).read(reinterpret_cast<char*>(got.data()), std::streamsize(got.size() * 4));
    ASSERT_EQ(got.size(), frames);
    for (uint32_t i = 0; i < frames; ++i)
      ASSERT_EQ(got[i], float(raw[size_t(i) * channels + c]) / 32768.0f) << "frame " << i;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// The device goes away for a second and comes back: vigild keeps running, its status says
// `down`, one alarm is raised and then cleared, capture resumes.
TEST(AlsaIntegration, ADeviceThatGoesAwayRaisesOneAlarmAndCaptureResumes) {
  const fs::path dir = fs::temp_directory_path() / ("vigil-alsa-gone-it-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "asound.conf") << "pcm_type.vigiltest { lib \"" << VIGIL_ALSA_TEST_PCM << "\" }\n"
                                     << "pcm.rig { type vigiltest rate 48000 gone_file \"" << (dir / "gone").string()
                                     << "\" }\n";
  const uint16_t event_port = test::free_udp_port();
  std::ofstream(dir / "vigil.yaml") << "source: {kind: alsa, device: rig, rate_hz: 48000, channels: 2, period_frames: 480}\n"
                                    << "outputs:\n  - {kind: events, destination: \"127.0.0.1:" << event_port
                                    << "\", status_interval_s: 0.2}\n";
  const std::string bin = std::string(VIGIL_BIN_DIR);
  test::Process listen({bin + "/vigil-listen", "--data-port", "0", "--event-port", std::to_string(event_port), "--json",
                        "--seconds", "30"},
                       (dir / "listen.jsonl").string());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  setenv("ALSA_CONFIG_PATH", (dir / "asound.conf").c_str(), 1);
  const std::string log = (dir / "vigild.log").string();
  test::Process vigild({"/bin/sh", "-c", "exec " + bin + "/vigild --config " + (dir / "vigil.yaml").string() +
                                             " --log-interval 0 2>" + log});
  unsetenv("ALSA_CONFIG_PATH");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  std::ofstream(dir / "gone") << "unplugged";
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  fs::remove(dir / "gone");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  vigild.signal(SIGTERM);
  const int status = vigild.wait(std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  listen.signal(SIGINT);
  listen.wait(std::chrono::seconds(5));
  const std::string log_text = test::read_text(log);
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << log_text;

  std::vector<nlohmann::json> alarms;
  bool saw_down = false;
  uint64_t chunks_before = 0, chunks_after = 0;
  nlohmann::json last_status;
  std::ifstream lines(dir / "listen.jsonl");
  std::string line;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] != "event") continue;
    const nlohmann::json& e = j["event"];
    if (e["type"] == "alarm") alarms.push_back(e);
    if (e["type"] == "status") {
      if (e["source"]["state"] == "down") {
        saw_down = true;
        chunks_before = e["chunks_in"].get<uint64_t>();
      }
      last_status = e;
    }
  }
  chunks_after = last_status["chunks_in"].get<uint64_t>();
  ASSERT_EQ(alarms.size(), 2u) << log_text;
  EXPECT_EQ(alarms[0]["rule"], "source_down");
  EXPECT_EQ(alarms[0]["state"], "raised");
  EXPECT_EQ(alarms[1]["rule"], "source_down");
  EXPECT_EQ(alarms[1]["state"], "cleared");
  EXPECT_TRUE(saw_down);
  EXPECT_GT(chunks_after, chunks_before + 50) << "capture resumed: about 100 periods a second";
  EXPECT_NE(log_text.find("capture: the alsa source failed to read"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("capture: reading again after"), std::string::npos) << log_text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil
