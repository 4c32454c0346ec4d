// Faults around the real vigild (issue 7): a receiver that is not there, then comes; overload at
// twice the sustainable rate, counted exactly by the receiver; a hundred reloads in one run;
// SIGKILL and restart; NaN and Inf input at the service level; absurd config values.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../support/ports.hpp"
#include "../support/graphs.hpp"
#include "../support/process.hpp"
#include "../support/temp_dir.hpp"
#include "../support/udp_receiver.hpp"
#include "../support/vigild_run.hpp"
#include "acquisition/chunk_pool.hpp"
#include "acquisition/file_source.hpp"
#include "wire/vita49.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define VIGIL_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define VIGIL_UNDER_SANITIZER 1
#endif
#endif

namespace vigil {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using test::UdpSocket;
using test::VigildRun;

using test::TempDir;

// 2 channels at 51.2 kHz x rate_factor in 512-frame chunks, a 2-band FIR bank, band data and
// input out over VITA 49 to data_port, events to event_port.
std::string service_config(uint16_t data_port, uint16_t event_port, const std::string& source_extra = "",
                           const std::string& pipeline = "", double cutoff_hz = 1000, int rate_factor = 10) {
  std::ostringstream c;
  c << "source:\n  kind: synthetic\n  rate_hz: 51200\n  channels: 2\n  format: int16\n  chunk_frames: 512\n"
    << "  seed: 5\n  rate_factor: " << rate_factor << "\n" << source_extra
    << "  signals:\n    - sines: [{freq_hz: 500, amplitude: 0.5}]\n      noise_rms: 0.01\n"
    << "    - sines: [{freq_hz: 3000, amplitude: 0.2}]\n      noise_rms: 0.01\n"
    << pipeline << R"(stages:
  - name: bands
    kind: fir_bank
    input: input
    taps: 63
    bands:
      - {name: low, type: lowpass, cutoff_hz: )" << cutoff_hz << R"(}
      - {name: high, type: highpass, cutoff_hz: )" << cutoff_hz << R"(}
outputs:
  - kind: vita49
    stream: input
    destination: 127.0.0.1:)" << data_port << R"(
  - kind: vita49
    stream: bands
    destination: 127.0.0.1:)" << data_port << R"(
  - kind: events
    destination: 127.0.0.1:)" << event_port << R"(
    status_interval_s: 0.25
)";
  return c.str();
}

const json& final_status(const test::Received& r) {
  static const json none = json::object();
  for (auto it = r.events.rbegin(); it != r.events.rend(); ++it)
    if ((*it)["type"] == "status" && (*it).value("final", false)) return *it;
  return none;
}

// Receiver absent: data goes to a port nobody has bound, so the kernel answers each datagram with
// ICMP port unreachable. vigild keeps running and sending, counts the refusals for that
// destination only, logs it once, and logs again when a receiver binds the port.
TEST(VigildFaults, AnAbsentReceiverIsCountedLoggedAndNoticedWhenItComes) {
  TempDir dir("absent");
  const uint16_t absent_port = test::free_udp_port();
  UdpSocket unused_data, events;
  std::ostringstream c;
  c << "source:\n  kind: synthetic\n  rate_hz: 51200\n  channels: 2\n  format: int16\n  chunk_frames: 512\n"
       "  rate_factor: 2\n"
    << test::room_for_stalls() << "outputs:\n  - kind: vita49\n    stream: input\n    destination: 127.0.0.1:"
    << absent_port
    << "\n  - kind: events\n    destination: 127.0.0.1:" << events.port << "\n    status_interval_s: 0.25\n";
  VigildRun run(unused_data, events, dir.write("vigil.yaml", c.str()), dir.file("vigild.log"));
  run.run_for(1500);

  // The receiver arrives: after 3 s without a refusal vigild says so.
  UdpSocket late(absent_port);
  ASSERT_EQ(late.port, absent_port);
  std::this_thread::sleep_for(std::chrono::milliseconds(3800));
  const int status = run.finish();
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;


  const json& fin = final_status(run.received);
  ASSERT_TRUE(fin.contains("outputs")) << fin.dump();
  const json& data_out = fin["outputs"][0];
  const json& event_out = fin["outputs"][1];
  EXPECT_EQ(data_out["kind"], "vita49");
  EXPECT_EQ(data_out["destination"], "127.0.0.1:" + std::to_string(absent_port));
  EXPECT_GT(data_out["refused"].get<uint64_t>(), 10u);
  EXPECT_GT(data_out["datagrams"].get<uint64_t>(), 10u);  // it kept sending
  EXPECT_EQ(data_out["other_errors"], 0);
  EXPECT_EQ(event_out["refused"], 0);
  EXPECT_EQ(fin["send_refused"], data_out["refused"]);
  EXPECT_EQ(fin["send_errors"].get<uint64_t>(), data_out["refused"].get<uint64_t>());
  // Nothing else suffered: every chunk went through, none late for want of a receiver.
  EXPECT_EQ(fin["chunks_out"], fin["chunks_in"]);
  EXPECT_EQ(fin["dropped_frames"], 0);
  const std::string dest = "output 127.0.0.1:" + std::to_string(absent_port);
  EXPECT_NE(run.log.find(dest + ": no receiver there (port unreachable)"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find(dest + ": the receiver is back"), std::string::npos) << run.log;
  // The late receiver got data.
  std::vector<uint8_t> buf(65536);
  EXPECT_GT(recv(late.fd, buf.data(), buf.size(), 0), 0);
}


// Samples missing from one stream, by its timestamps: each packet should start where the previous
// ended (1/51200 s = 19 531 250 ps per sample; chunk times are whole nanoseconds, so round).
struct Holes {
  uint64_t samples = 0;  // missing between the first and the last packet
  uint64_t holes = 0;    // places where samples are missing
  __int128 last_hole_ps = 0;
};
Holes holes_in(const std::vector<std::pair<__int128, size_t>>& ts) {
  Holes h;
  for (size_t k = 1; k < ts.size(); ++k) {
    const __int128 expect = ts[k - 1].first + __int128(ts[k - 1].second) * 19'531'250;
    const double missing = double(ts[k].first - expect) / 19'531'250.0;
    EXPECT_GT(missing, -0.01) << "packet " << k << " overlaps its predecessor";
    if (missing > 0.5) {
      h.samples += uint64_t(std::llround(missing));
      ++h.holes;
      h.last_hole_ps = ts[k].first;
    }
  }
  return h;
}

// Overload: the pipeline takes 2 ms per 1 ms chunk (twice the sustainable rate) for its first
// second, then the load falls. Frames the pool cannot hold are dropped and counted; the receiver
// finds exactly that many samples missing from every stream, each hole flagged, its own packet
// counter unbroken; when the load falls the service recovers: no more drops or misses.
TEST(VigildFaults, OverloadAtTwiceTheRateIsCountedExactlyAndRecovers) {
  TempDir dir("overload2x");
  UdpSocket data, events;
  const uint64_t total_frames = 25 * 51200;  // 25 s of signal at 10x: 2.5 s
  const std::string config = service_config(data.port, events.port, "  duration_s: 25\n",
                                            "pipeline:\n  test_chunk_cost_ms: 2\n  test_chunk_cost_for_s: 1\n");
  VigildRun run(data, events, dir.write("vigil.yaml", config), dir.file("vigild.log"));
  const int status = run.wait_exit(std::chrono::seconds(30));  // the source ends by itself
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
  const test::Received& r = run.received;
  const json& fin = final_status(r);
  ASSERT_TRUE(fin.contains("frames_in")) << fin.dump();
  const uint64_t dropped = fin["dropped_frames"].get<uint64_t>() + fin["output_dropped_frames"].get<uint64_t>();
  EXPECT_EQ(fin["frames_in"].get<uint64_t>() + fin["dropped_frames"].get<uint64_t>(), total_frames);
  EXPECT_GT(dropped, 51200u);  // about half of a second of input at 10x is 256 k frames
  EXPECT_GT(fin["deadline_misses"].get<uint64_t>(), 100u);
  EXPECT_EQ(fin["send_errors"], 0);
  std::printf("overload: %llu of %llu frames dropped, %llu deadline misses (by %s)\n", (unsigned long long)dropped,
              (unsigned long long)total_frames, (unsigned long long)fin["deadline_misses"].get<uint64_t>(),
              fin["deadline_misses_by"].dump().c_str());

  ASSERT_EQ(r.monitor.streams().size(), 6u);  // input: 2 lanes; bands: 2 x 2
  for (const auto& [id, s] : r.monitor.streams()) {
    const Holes h = holes_in(r.timestamps.at(id));
    EXPECT_EQ(s.gaps, 0u) << std::hex << id;                 // no datagram lost on the way
    EXPECT_EQ(h.samples, dropped) << std::hex << id;         // the receiver's count is the sender's
    EXPECT_EQ(s.samples + h.samples, total_frames) << std::hex << id;
    EXPECT_EQ(s.sample_loss_flags, h.holes) << std::hex << id;  // each hole flagged in the trailer
    EXPECT_GT(h.holes, 0u);
    // The last hole is in the overloaded first second (signal time 10 s of 25), not later.
    const __int128 first_ps = r.timestamps.at(id).front().first;
    EXPECT_LT(double(h.last_hole_ps - first_ps) / 1e12, 15.0) << std::hex << id;
  }
  // Recovered: from 1.6 s on (the backlog is gone well before) nothing more is dropped, which
  // the service can only do by keeping up with its input again. Late chunks after recovery are
  // printed, not judged: the deadline is 1 ms after capture at 10x real time, so a host stall of
  // N ms makes about N chunks late, and their count measures the host (1 to 93 of 750 on this
  // 2-vCPU machine with nothing beside it, 545 with a build beside it; 141 in CI's normal build
  // with this test running alone; 43 to 314 under ThreadSanitizer).
  const json* after = nullptr;
  for (const json& e : r.events)
    if (e["type"] == "status" && e["uptime_s"].get<double>() >= 1.6 && !e.value("final", false)) {
      after = &e;
      break;
    }
  ASSERT_NE(after, nullptr);
  EXPECT_EQ((*after)["dropped_frames"], fin["dropped_frames"]);
  EXPECT_EQ((*after)["output_dropped_frames"], fin["output_dropped_frames"]);
  const uint64_t late_after = fin["deadline_misses"].get<uint64_t>() - (*after)["deadline_misses"].get<uint64_t>();
  const uint64_t chunks_after = fin["chunks_out"].get<uint64_t>() - (*after)["chunks_out"].get<uint64_t>();
  EXPECT_GT(chunks_after, 500u);
  std::printf("after recovery: %llu of %llu chunks late\n", (unsigned long long)late_after,
              (unsigned long long)chunks_after);
}

// A hundred SIGHUP reloads in one run, each changing the filters' coefficients (cutoff 1000 Hz
// and 1500 Hz in turn): every one is applied in place with a crossfade, and no sample is lost,
// repeated or out of order on any stream.
TEST(VigildFaults, AHundredReloadsInOneRunLoseNoSample) {
  TempDir dir("reload100");
  UdpSocket data, events;
  const std::string config = dir.file("vigil.yaml");
  auto write_config = [&](double cutoff_hz) {  // whole file at once: vigild never reads half of one
    std::ofstream(config + ".new") << service_config(data.port, events.port, "  duration_s: 200\n",
                                                     test::room_for_stalls(), cutoff_hz);
    fs::rename(config + ".new", config);
  };
  write_config(1000);
  VigildRun run(data, events, config, dir.file("vigild.log"));
  run.run_for(200);
  for (int k = 1; k <= 100; ++k) {
    write_config(k % 2 ? 1500 : 1000);
    run.signal(SIGHUP);
    // One at a time: signals sent faster than vigild takes them would merge into one.
    for (int i = 0; i < 2000 && run.received.reloads.load() < uint64_t(k); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(run.received.reloads.load(), uint64_t(k)) << "reload " << k << " not reported within 10 s";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int status = run.finish();
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
  const test::Received& r = run.received;

  uint64_t updated = 0, starts = 0, last_from = 0;
  for (const json& e : r.events) {
    if (e["type"] == "start") ++starts;
    if (e["type"] != "reload") continue;
    EXPECT_EQ(e["result"], "updated") << e.dump();
    if (e["result"] != "updated") continue;
    ++updated;
    EXPECT_GT(e["from_frame"].get<uint64_t>(), last_from);  // each took effect at a later chunk
    last_from = e["from_frame"].get<uint64_t>();
  }
  EXPECT_EQ(updated, 100u);
  EXPECT_EQ(starts, 1u);  // never rebuilt
  const json& fin = final_status(r);
  ASSERT_TRUE(fin.contains("frames_in")) << fin.dump();
  EXPECT_EQ(fin["dropped_frames"], 0);
  EXPECT_EQ(fin["output_dropped_frames"], 0);
  ASSERT_EQ(r.monitor.streams().size(), 6u);
  for (const auto& [id, s] : r.monitor.streams()) {
    EXPECT_EQ(s.samples, fin["frames_in"].get<uint64_t>()) << std::hex << id;
    EXPECT_EQ(s.gaps, 0u) << std::hex << id;
    EXPECT_EQ(s.timestamp_errors, 0u) << std::hex << id;
    const Holes h = holes_in(r.timestamps.at(id));
    EXPECT_EQ(h.holes, 0u) << std::hex << id;
  }
}

// Frames a recording replays (every chunk read to the end), or -1 when it cannot be opened.
int64_t replayable_frames(const std::string& meta_path) {
  try {
    FileSource src({meta_path, 512, 0.0, false});
    ChunkPool pool(2, 512 * src.info().channels * 4);
    int64_t frames = 0;
    ReadStatus st;
    while ((st = src.read(pool.chunk(0))) == ReadStatus::kOk) frames += pool.chunk(0).header.frames;
    return st == ReadStatus::kEnd ? frames : -1;
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return -1;
  }
}

std::vector<std::string> recordings_in(const fs::path& dir) {
  std::vector<std::string> metas;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".sigmf-meta") metas.push_back(e.path().string());
  std::sort(metas.begin(), metas.end());
  return metas;
}

// SIGKILL mid-run (recording, metrics endpoint with a client connected), then a restart on the
// same config: it starts at once (the port is free again, nothing stale blocks it), records to a
// new file beside the old one, and the killed run's recording replays up to its last whole chunk.
TEST(VigildFaults, SigkillThenRestartResumes) {
  TempDir dir("sigkill");
  const fs::path rec = dir.path / "rec";
  const uint16_t metrics_port = test::free_tcp_port();
  UdpSocket data1, events1;
  const std::string config = dir.write(
      "vigil.yaml", service_config(data1.port, events1.port, "  duration_s: 600\n", test::room_for_stalls()) +
                        "record:\n  directory: " + rec.string() + "\nmetrics:\n  listen: 127.0.0.1:" +
                        std::to_string(metrics_port) + "\n");
  uint64_t first_run_frames = 0;
  {
    VigildRun run(data1, events1, config, dir.file("vigild-1.log"));
    run.run_for(1000);
    // A metrics client holding a connection open at the moment of the kill.
    const int client = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(metrics_port);
    ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int status = run.finish(SIGKILL);
    close(client);
    ASSERT_NE(status, -1);
    ASSERT_TRUE(WIFSIGNALED(status));
    for (const auto& [id, s] : run.received.monitor.streams()) first_run_frames = std::max(first_run_frames, s.samples);
  }
  ASSERT_GT(first_run_frames, 51200u);
  std::printf("killed after %llu frames sent\n", (unsigned long long)first_run_frames);
  const std::vector<std::string> killed = recordings_in(rec);
  ASSERT_EQ(killed.size(), 1u);

  // Restart at once.
  {
    VigildRun run(data1, events1, config, dir.file("vigild-2.log"));
    run.run_for(800);
    const int status = run.finish();
    ASSERT_NE(status, -1);
    EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
    const json& fin = final_status(run.received);
    ASSERT_TRUE(fin.contains("frames_in")) << run.log;
    EXPECT_EQ(fin["dropped_frames"], 0);
    for (const auto& [id, s] : run.received.monitor.streams()) {
      EXPECT_EQ(s.samples, fin["frames_in"].get<uint64_t>()) << std::hex << id;
      EXPECT_EQ(s.gaps, 0u);
    }
    EXPECT_EQ(run.received.events.front()["type"], "start");
    EXPECT_EQ(run.received.events.front()["seq"], 0);
  }
  const std::vector<std::string> after = recordings_in(rec);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_TRUE(std::find(after.begin(), after.end(), killed[0]) != after.end());  // the old one kept
  // The killed run's recording: readable, whole chunks, about what was sent before the kill (the
  // recorder writes behind the output by a few chunks at most).
  const int64_t frames = replayable_frames(killed[0]);
  EXPECT_EQ(frames % 512, 0);
  EXPECT_GE(frames + 64 * 512, int64_t(first_run_frames));
  EXPECT_LE(frames, int64_t(first_run_frames) + 64 * 512);
  std::printf("the killed run's recording replays %lld frames\n", (long long)frames);
  const int64_t second = replayable_frames(after[0] == killed[0] ? after[1] : after[0]);
  EXPECT_GT(second, 0);
}

// NaN and Inf input at the service level: a float recording with a NaN burst, an Inf burst and a
// lone -Inf, replayed through a 255-tap FIR bank. Each is counted and replaced by 0 before any
// filter sees it, so every output sample is finite and the band outputs are bit for bit those of
// the same recording with zeros in those places: the filters' state is never poisoned.
TEST(VigildFaults, NonFiniteInputIsCountedReplacedAndNeverPoisonsTheFilters) {
  TempDir dir("nonfinite");
  const size_t frames = 51200, channels = 2;
  std::vector<float> clean(frames * channels);
  uint32_t seed = 12345;
  for (size_t i = 0; i < frames; ++i)
    for (size_t c = 0; c < channels; ++c) {
      seed = seed * 1664525u + 1013904223u;
      clean[i * channels + c] = float(0.5 * std::sin(2 * M_PI * (500.0 + 2500.0 * double(c)) * double(i) / 51200.0) +
                                      0.05 * (double(seed >> 8) / double(1 << 24) - 0.5));
    }
  std::vector<float> dirty = clean;
  std::vector<size_t> poisoned;  // interleaved indices
  for (size_t i = 10000; i < 10100; ++i) poisoned.push_back(i * channels + 0);                 // NaN, channel 0
  for (size_t i = 20000; i < 20010; ++i) poisoned.push_back(i * channels + 1);                 // +Inf, channel 1
  poisoned.push_back(30000 * channels + 0);                                                    // -Inf
  for (size_t k : poisoned) {
    const size_t frame = k / channels;
    dirty[k] = frame < 20000 ? std::nanf("") : frame < 30000 ? INFINITY : -INFINITY;
    clean[k] = 0.0f;  // what vigild should filter in its place
  }
  auto write_recording = [&](const std::string& name, const std::vector<float>& x) {
    const std::string base = dir.file(name);
    std::ofstream(base + ".sigmf-meta") << R"({"global": {"core:datatype": "rf32_le", "core:sample_rate": 51200,
        "core:num_channels": 2, "core:version": "1.0.0"}, "captures": [{"core:sample_start": 0}], "annotations": []})";
    std::ofstream(base + ".sigmf-data", std::ios::binary).write(reinterpret_cast<const char*>(x.data()),
                                                                 std::streamsize(x.size() * sizeof(float)));
    return base + ".sigmf-meta";
  };
  auto run_on = [&](const std::string& recording, test::Received& out, json& fin) {
    UdpSocket data, events;
    std::ostringstream c;
    // Paced at real time: every sample must arrive to be compared (a burst can overflow loopback,
    // and a sanitizer-slowed vigild must not fall behind).
    c << "source:\n  kind: file\n  path: " << recording << "\n  chunk_frames: 512\n  rate_factor: 1\n"
      << "stages:\n" << test::bands_stages(test::BandsGraph().taps(255).level("level").threshold(10)) << R"(outputs:
  - {kind: vita49, stream: input, destination: "127.0.0.1:)" << data.port << R"("}
  - {kind: vita49, stream: bands, destination: "127.0.0.1:)" << data.port << R"("}
  - {kind: events, destination: "127.0.0.1:)" << events.port << R"("}
)";
    VigildRun run(data, events, dir.write("vigil.yaml", c.str()), dir.file("vigild.log"), true, true);
    const int status = run.wait_exit(std::chrono::seconds(30));
    ASSERT_NE(status, -1);
    ASSERT_EQ(WEXITSTATUS(status), 0) << run.log;
    fin = final_status(run.received);
    out.samples = run.received.samples;
  };
  test::Received dirty_out, clean_out;
  json dirty_fin, clean_fin;
  run_on(write_recording("dirty", dirty), dirty_out, dirty_fin);
  run_on(write_recording("clean", clean), clean_out, clean_fin);
  ASSERT_FALSE(testing::Test::HasFatalFailure());

  EXPECT_EQ(dirty_fin["non_finite_samples"], poisoned.size());
  EXPECT_EQ(clean_fin["non_finite_samples"], 0);
  ASSERT_EQ(dirty_out.samples.size(), 6u);  // input 2 lanes, bands 2 x 2
  for (const auto& [id, x] : dirty_out.samples) {
    ASSERT_EQ(x.size(), frames) << std::hex << id;
    for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(std::isfinite(x[i])) << std::hex << id << " sample " << i;
    const std::vector<float>& y = clean_out.samples.at(id);
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << std::hex << id << " sample " << i;
  }
  // The input stream carries the zeros in their places.
  for (size_t k : poisoned) EXPECT_EQ(dirty_out.samples.at(uint32_t(k % channels)).at(k / channels), 0.0f) << k;
}

// Absurd values: each gives its FILE:LINE:COLUMN error on the first line of stderr and exit 2,
// from the real start path (not only --check-config), before anything runs.
TEST(VigildFaults, AbsurdConfigValuesGiveAClearErrorAndExit2) {
  TempDir dir("absurd");
  struct Case {
    const char* what;
    std::vector<std::pair<std::string, std::string>> edits;  // replaced in the base config
    std::string error;                                       // expected after "FILE:"
  };
  const std::string base = service_config(9, 9, "  duration_s: 0.1\n");
  const std::vector<Case> cases = {
      {"0 channels", {{"channels: 2", "channels: 0"}}, "4:13: source.channels must be 1..4096, got 0"},
      {"rate 0", {{"rate_hz: 51200", "rate_hz: 0"}}, "3:12: source.rate_hz must be 1..1e+07, got 0"},
      {"negative rate", {{"rate_hz: 51200", "rate_hz: -1"}}, "3:12: source.rate_hz must be 1..1e+07, got -1"},
      {"0 taps", {{"taps: 63", "taps: 0"}}, "19:11: stages[0].taps must be 1..65536, got 0"},
      {"10^9 taps", {{"taps: 63", "taps: 1000000000"}}, "19:11: stages[0].taps must be 1..65536, got 1000000000"},
      {"10^9 frames a chunk", {{"chunk_frames: 512", "chunk_frames: 1000000000"}},
       "6:17: source.chunk_frames must be 1..1048576, got 1000000000"},
      {"a pool larger than memory", {{"chunk_frames: 512", "chunk_frames: 1048576"}, {"stages:", "pipeline:\n  pool_chunks: 65536\nstages:"}},
       "6:17: source.chunk_frames: a chunk of 4194304 bytes times pipeline.pool_chunks 65536 is 274877906944 bytes, "
       "above the pool limit of 1073741824 bytes"},
      {"output slots larger than memory", {{"chunk_frames: 512", "chunk_frames: 8192"}, {"stages:", "pipeline:\n  output_slots: 65536\nstages:"}},
       "16:17: pipeline.output_slots: 65536 slots of 196608 bytes (every data output's lanes of one chunk) is "
       "12884901888 bytes, above the limit of 1073741824 bytes"},
      {"a cutoff above Nyquist", {{"cutoff_hz: 1000}\n      - {name: high", "cutoff_hz: 30000}\n      - {name: high"}},
       "21:47: stages[0].bands[0].cutoff_hz must be above 0 and below 25600, got 30000"},
      {"a negative interval", {{"status_interval_s: 0.25", "status_interval_s: -1"}},
       "32:24: outputs[2].status_interval_s must be 0.1..3600, got -1"},
      {"not a number", {{"rate_factor: 10", "rate_factor: fast"}}, "8:16: source.rate_factor: expected a number, got 'fast'"},
      {"an unknown wavelet", {{"outputs:", "  - {name: den, kind: wavelet_denoise, input: bands, wavelet: db99}\noutputs:"}},
       "23:63: stages[1].wavelet: unknown wavelet 'db99' (haar, db1..db20, sym2..sym20)"},
      {"a key twice", {{"channels: 2", "channels: 2\n  channels: 1024"}},
       "5:3: key 'channels' given twice in source (first at line 4, column 3)"},
  };
  for (const Case& c : cases) {
    std::string text = base;
    for (const auto& [from, to] : c.edits) {
      const size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << c.what;
      text.replace(at, from.size(), to);
    }
    const std::string config = dir.write("absurd.yaml", text), err = dir.file("err.txt");
    test::Process p({"/bin/sh", "-c", std::string(VIGIL_BIN_DIR) + "/vigild --config " + config + " 2>" + err});
    const int st = p.wait(std::chrono::seconds(20));
    ASSERT_NE(st, -1) << c.what;
    const std::string out = test::read_text(err);
    EXPECT_EQ(WEXITSTATUS(st), 2) << c.what << "\n" << out;
    EXPECT_EQ(out.rfind(config + ":" + c.error, 0), 0u) << c.what << "\n" << out;
  }
}

// A receiver that stops reading (its socket buffer full: the kernel drops what arrives) never
// holds vigild up, and vigil-listen accounts for every datagram: those it got plus those the
// kernel says it dropped (SO_RXQ_OVFL) are exactly what vigild sent, and by timestamps it finds
// the samples missing from each stream, which with those received make every frame captured. Its
// recording puts every sample after a hole at its time: a segment from each hole, whose timestamp
// lies exactly the hole's missing samples past where the file's samples before it end.
TEST(VigildFaults, AReceiverThatStopsReadingLosesOnlyWhatItsKernelCounts) {
  TempDir dir("stalled-listener");
  const uint16_t listen_port = test::free_udp_port();
  UdpSocket unused, events;
  std::ostringstream c;
  c << "source:\n  kind: synthetic\n  rate_hz: 51200\n  channels: 2\n  format: int16\n  chunk_frames: 512\n"
       "  rate_factor: 10\n"
       // Half a second of room for the pipeline and the output: vigild must lose nothing itself,
       // and CI's full suite on two cores once stalled it past the default 64 chunks (6 dropped).
       "pipeline: {pool_chunks: 512, output_slots: 512}\n"
       "outputs:\n  - kind: vita49\n    stream: input\n    destination: 127.0.0.1:"
    << listen_port << "\n  - kind: events\n    destination: 127.0.0.1:" << events.port << "\n    status_interval_s: 0.25\n";
  const std::string listen_out = dir.file("listen.jsonl");
  test::Process listen({std::string(VIGIL_BIN_DIR) + "/vigil-listen", "--data-port", std::to_string(listen_port),
                        "--event-port", "0", "--buffer-kib", "256", "--json", "--quiet", "--record",
                        dir.file("rec")},
                       listen_out);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // bound before vigild sends
  VigildRun run(unused, events, dir.write("vigil.yaml", c.str()), dir.file("vigild.log"));
  run.run_for(300);
  listen.signal(SIGSTOP);  // 4 MB/s arrive; the 256 KiB buffer fills within 0.1 s
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  listen.signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int status = run.finish();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  listen.signal(SIGTERM);
  ASSERT_NE(listen.wait(std::chrono::seconds(10)), -1);
  ASSERT_NE(status, -1);
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
  const json& fin = final_status(run.received);
  ASSERT_TRUE(fin.contains("packets_sent")) << fin.dump();
  EXPECT_EQ(fin["send_errors"], 0);
  EXPECT_EQ(fin["dropped_frames"], 0);  // vigild itself lost nothing

  std::istringstream lines(test::read_text(listen_out));
  json summary;
  for (std::string line; std::getline(lines, line);)
    if (json j = json::parse(line, nullptr, false); !j.is_discarded() && j["kind"] == "summary") summary = j;
  ASSERT_TRUE(summary.is_object()) << test::read_text(listen_out);
  const uint64_t kernel_drops = summary["kernel_drops"]["data"].get<uint64_t>();
  EXPECT_GT(kernel_drops, 100u);
  EXPECT_EQ(summary["data_datagrams"].get<uint64_t>() + kernel_drops,
            fin["packets_sent"].get<uint64_t>() + fin["context_packets_sent"].get<uint64_t>());
  ASSERT_EQ(summary["streams"].size(), 2u);
  for (const json& st : summary["streams"]) {
    EXPECT_GT(st["holes"].get<uint64_t>(), 0u) << st.dump();
    EXPECT_EQ(st["samples"].get<uint64_t>() + st["samples_missing"].get<uint64_t>(), fin["frames_in"].get<uint64_t>())
        << st.dump();

    const std::string id = vita49::stream_id_hex(st["stream_id"].get<uint32_t>());
    const json side = json::parse(std::ifstream(dir.file("rec/stream-" + id + ".json")));
    const uint64_t samples = side["samples"].get<uint64_t>();
    EXPECT_EQ(samples, st["samples"].get<uint64_t>());
    EXPECT_EQ(std::filesystem::file_size(dir.file("rec/stream-" + id + ".f32")), samples * 4);
    const json& seg = side["segments"];
    ASSERT_EQ(seg.size(), side["holes"].get<uint64_t>() + 1) << side.dump();
    EXPECT_EQ(side["overlaps"], 0);
    EXPECT_EQ(seg[0]["sample"], 0);
    EXPECT_EQ(seg[0]["ts_int"], side["first_ts_int"]);
    EXPECT_EQ(seg[0]["ts_frac_ps"], side["first_ts_frac_ps"]);
    auto ps = [](const json& g) {
      return __int128(g["ts_int"].get<uint32_t>()) * 1'000'000'000'000 + g["ts_frac_ps"].get<uint64_t>();
    };
    uint64_t missing = 0;
    for (size_t k = 1; k < seg.size(); ++k) {
      const uint64_t in_file = seg[k]["sample"].get<uint64_t>() - seg[k - 1]["sample"].get<uint64_t>();
      const uint64_t by_time = uint64_t(std::llround(double(ps(seg[k]) - ps(seg[k - 1])) * 51200 / 1e12));
      ASSERT_GT(by_time, in_file) << "segment " << k << " of " << side.dump();
      missing += by_time - in_file;
    }
    EXPECT_EQ(missing, side["samples_missing"].get<uint64_t>()) << side.dump();
    EXPECT_LT(seg.back()["sample"].get<uint64_t>(), samples);
  }
  std::printf("stalled listener: %llu datagrams dropped by its kernel, all accounted\n", (unsigned long long)kernel_drops);
}

// A config every value of which is in range, but which needs more memory than the machine grants
// (here an address-space limit of 1 GB): a clear error naming what to lower, and exit 2 (not
// 1: restarting cannot help), whether the pool or a stage's buffers fail first.
// Not compiled into sanitizer builds: an address-space limit cannot apply under their shadow
// memory. The normal build (CI, the GPU machine) runs it.
#ifndef VIGIL_UNDER_SANITIZER
TEST(VigildFaults, AConfigNeedingMoreMemoryThanThereIsExits2) {
  TempDir dir("nomemory");
  for (const int pool_chunks : {8, 2}) {  // 8: the 1 GiB pool fails; 2: the graph's blocks do
    std::ostringstream c;
    c << "source:\n  kind: synthetic\n  rate_hz: 51200\n  channels: 1024\n  chunk_frames: 65536\n  duration_s: 1\n"
      << "pipeline:\n  pool_chunks: " << pool_chunks << "\n  output_slots: 2\n"
      << "stages:\n  - name: bands\n    kind: fir_bank\n    input: input\n    taps: 63\n    bands: ["
      << "{name: a, type: lowpass, cutoff_hz: 1000}, {name: b, type: lowpass, cutoff_hz: 2000},"
      << "{name: c, type: lowpass, cutoff_hz: 3000}, {name: d, type: lowpass, cutoff_hz: 4000}]\n"
      << "outputs:\n  - {kind: events, destination: \"127.0.0.1:9\"}\n";
    const std::string config = dir.write("big.yaml", c.str()), err = dir.file("err.txt");
    test::Process p({"/bin/sh", "-c",
                     "ulimit -v 1000000; exec " + std::string(VIGIL_BIN_DIR) + "/vigild --config " + config + " 2>" + err});
    const int st = p.wait(std::chrono::seconds(30));
    ASSERT_NE(st, -1);
    const std::string out = test::read_text(err);
    EXPECT_EQ(WEXITSTATUS(st), 2) << out;
    EXPECT_NE(out.find("vigild: cannot start with " + config + ": "), std::string::npos) << out;
    EXPECT_NE(out.find("not enough memory for the buffers and filters the config describes; lower source.channels"),
              std::string::npos)
        << out;
  }
}
#endif  // VIGIL_UNDER_SANITIZER

}  // namespace
}  // namespace vigil
