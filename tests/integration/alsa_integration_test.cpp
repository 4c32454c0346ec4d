// The real vigild capturing from ALSA (real libasound, its `file` PCM reading a raw file of known
// S16_LE samples through ALSA_CONFIG_PATH), with vigil-listen --record on loopback: the `input`
// stream carries exactly the file's samples, channel by channel.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../support/process.hpp"
#include "../support/udp.hpp"

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
  std::ifstream log_in(log);
  const std::string log_text((std::istreambuf_iterator<char>(log_in)), {});
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
