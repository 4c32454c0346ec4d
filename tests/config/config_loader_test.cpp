// Every kind of config error points at the right line and column.
#include "config/config_loader.hpp"

#include "acquisition/sha256.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace vigil {
namespace {

const char* kValid = R"(source:
  kind: synthetic
  rate_hz: 51200
  channels: 2
  chunk_frames: 256
stages:
  - name: bands
    kind: fir_bank
    input: input
    taps: 63
    bands:
      - {name: low, type: lowpass, cutoff_hz: 1000}
      - {name: high, type: highpass, cutoff_hz: 1000}
  - name: alarm
    kind: band_rms
    input: bands
    threshold: 0.5
outputs:
  - kind: vita49
    stream: bands
    destination: 127.0.0.1:5000
  - kind: events
    destination: "[::1]:5001"
)";

// Replaces the first occurrence of `from` in kValid.
std::string edit(const std::string& from, const std::string& to) {
  std::string s = kValid;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

void expect_one_error(const std::string& yaml, int line, int column, const std::string& fragment) {
  const ConfigResult r = parse_config(yaml, "test.yaml");
  ASSERT_FALSE(r.settings.has_value());
  ASSERT_EQ(r.errors.size(), 1u) << (r.errors.empty() ? "" : format_error("test.yaml", r.errors[0]));
  const ConfigError& e = r.errors[0];
  EXPECT_EQ(e.line, line) << e.message;
  EXPECT_EQ(e.column, column) << e.message;
  EXPECT_NE(e.message.find(fragment), std::string::npos) << "message: " << e.message;
}

void expect_one_error_in(const std::string& yaml, int line, int column, const std::string& fragment) {
  expect_one_error(yaml, line, column, fragment);
}

TEST(ConfigLoader, ValidFileLoads) {
  const ConfigResult r = parse_config(kValid, "test.yaml");
  ASSERT_TRUE(r.errors.empty()) << format_error("test.yaml", r.errors[0]);
  const Settings& s = *r.settings;
  EXPECT_EQ(s.synthetic.channels, 2u);
  EXPECT_EQ(s.synthetic.rate_hz, 51200);
  ASSERT_EQ(s.stages.size(), 2u);
  const auto& fir = std::get<FirBankSettings>(s.stages[0].params);
  EXPECT_EQ(fir.taps, 63u);
  ASSERT_EQ(fir.bands.size(), 2u);
  EXPECT_EQ(fir.bands[1].type, FilterType::kHighpass);
  const auto& rms = std::get<BandRmsSettings>(s.stages[1].params);
  EXPECT_DOUBLE_EQ(rms.threshold, 0.5);
  EXPECT_DOUBLE_EQ(rms.clear_threshold, 0.45);  // default 0.9 x threshold
  ASSERT_EQ(s.data_outputs.size(), 1u);
  EXPECT_EQ(s.data_outputs[0].destination.port, 5000);
  ASSERT_EQ(s.event_outputs.size(), 1u);
  EXPECT_EQ(s.event_outputs[0].destination.host, "::1");
}

TEST(ConfigLoader, TheShippedDefaultConfigIsValid) {
  const ConfigResult r = load_config_file(std::string(VIGIL_SOURCE_DIR) + "/config/vigil.yaml");
  EXPECT_TRUE(r.errors.empty()) << format_error("vigil.yaml", r.errors[0]);
}

TEST(ConfigLoader, TheExampleConfigsAreValid) {
  for (const char* name : {"ae-rig.yaml", "vibration-rig.yaml", "fleet/rig.yaml", "vita49-receiver.yaml"}) {
    if (!VIGIL_HAVE_NATS && std::string(name) == "fleet/rig.yaml") continue;  // AFleetOutput... check the refusal
    const ConfigResult r = load_config_file(std::string(VIGIL_SOURCE_DIR) + "/config/examples/" + name);
    EXPECT_TRUE(r.errors.empty()) << format_error(name, r.errors[0]);
  }
}

// The scenario benchmarks' configs, with their placeholders filled as scripts/bench_scenarios.py
// fills them: a typo there would otherwise show only when the benchmark runs.
TEST(ConfigLoader, TheScenarioConfigsAreValid) {
  const std::vector<std::pair<std::string, std::string>> fill = {
      {"@CHANNELS@", "2"}, {"@RATE_FACTOR@", "1"}, {"@BACKEND@", "cpu"}, {"@BUSY_POLL@", "false"},
      {"@THREADS@", "8"}, {"@SEND_THREADS@", "4"}, {"@DATA_PORT@", "5000"}, {"@EVENT_PORT@", "5001"},
      {"@WISDOM@", "/tmp/w"}, {"@MAX_LATENCY@", "4096"}, {"@CHUNK_FRAMES@", "4096"}};
  for (const char* name : {"s1-ae.yaml", "s2-vibration.yaml", "s3-crossover.yaml"}) {
    std::ifstream f(std::string(VIGIL_SOURCE_DIR) + "/bench/scenarios/" + name);
    ASSERT_TRUE(f) << name;
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (const auto& [from, to] : fill)
      for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)  // outside comments, no '@' is left
      EXPECT_EQ(line.substr(0, line.find('#')).find('@'), std::string::npos) << name << ": unfilled: " << line;
    const ConfigResult r = parse_config(text, name);
    EXPECT_TRUE(r.errors.empty()) << format_error(name, r.errors[0]);
  }
}

TEST(ConfigLoader, SyntaxErrorHasLineAndColumn) {
  // yaml-cpp notices the unclosed flow sequence of line 4 at the ':' of line 5 (column 15).
  expect_one_error(edit("  channels: 2", "  channels: [2"), 5, 15, "syntax error");
}

// "[::1]:5001" unquoted is a YAML list followed by ":5001": yaml-cpp says "end of map not found";
// the error says to quote it, at the bracket, in block and in flow style.
TEST(ConfigLoader, AnUnquotedBracketedAddressIsNamed) {
  expect_one_error(edit("destination: \"[::1]:5001\"", "destination: [::1]:5001"), 23, 18,
                   "syntax error: an address in brackets must be quoted (YAML reads [...] as a list): "
                   "write \"[::1]:5001\"");
  expect_one_error(edit("  - kind: events\n    destination: \"[::1]:5001\"",
                        "  - {kind: events, destination: [fe80::1%eth0]:5001}"),
                   22, 33, "write \"[fe80::1%eth0]:5001\"");
  expect_one_error(edit("  channels: 2", "  channels: [2"), 5, 15, "syntax error: end of");  // other lists: as before
}

TEST(ConfigLoader, TabInTheIndentationIsNamed) {
  // yaml-cpp reports "illegal map value" at line 5; the error names the tab where it is.
  expect_one_error(edit("  chunk_frames: 256", "  chunk_frames: 256\n\tpool_chunks: 8"), 6, 1,
                   "syntax error: a tab in the indentation (YAML indents with spaces only)");
  expect_one_error(edit("    taps: 63", "  \t  taps: 63"), 10, 3, "a tab in the indentation");
  // A tab after the error's line is not its cause: yaml-cpp's own message stays.
  expect_one_error(edit("  channels: 2", "  channels: [2") + "\t# trailing\n", 5, 15, "syntax error: end of");
}

// A key of another source kind says which kind takes it, instead of a near key of this one.
TEST(ConfigLoader, ASourceKeyOfAnotherKindSaysWhichKindTakesIt) {
  expect_one_error(edit("  channels: 2", "  channels: 2\n  period_frames: 256"), 5, 3,
                   "unknown key 'period_frames' in source (it applies to kind: alsa, not kind: synthetic)");
  expect_one_error(edit("  channels: 2", "  channels: 2\n  loop: true"), 5, 3,
                   "unknown key 'loop' in source (it applies to kind: file, not kind: synthetic)");
  // A real recording for kind: file (its probe must pass): 16-bit mono PCM, 8 kHz, 64 frames.
  const std::string wav =
      (std::filesystem::temp_directory_path() / ("vigil-keys-" + std::to_string(getpid()) + ".wav")).string();
  {
    std::ofstream f(wav, std::ios::binary);
    const auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
    const auto u16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
    f << "RIFF";
    u32(36 + 128);
    f << "WAVEfmt ";
    u32(16), u16(1), u16(1), u32(8000), u32(16000), u16(2), u16(16);
    f << "data";
    u32(128);
    for (int i = 0; i < 64; ++i) u16(uint16_t(i * 97));
  }
  expect_one_error(edit("  kind: synthetic\n  rate_hz: 51200\n  channels: 2\n  chunk_frames: 256",
                        "  kind: file\n  path: " + wav + "\n  duration_s: 2"),
                   4, 3,
                   "unknown key 'duration_s' in source (it applies to kind: alsa and kind: synthetic, not kind: file)");
  expect_one_error(edit("  kind: synthetic\n  rate_hz: 51200\n  channels: 2\n  chunk_frames: 256",
                        "  kind: file\n  path: " + wav + "\n  rate_hz: 8000"),
                   4, 3, "unknown key 'rate_hz' in source (a recording brings its own rate, channels and format)");
  std::filesystem::remove(wav);
#if VIGIL_HAVE_ALSA
  expect_one_error(edit("  kind: synthetic\n  rate_hz: 51200\n  channels: 2\n  chunk_frames: 256",
                        "  kind: alsa\n  device: hw:0\n  chunk_frames: 256"),
                   4, 3,
                   "unknown key 'chunk_frames' in source (an ALSA source's chunk is one period: set period_frames)");
#endif
}

// The same for stages and outputs.
TEST(ConfigLoader, AStageOrOutputKeyOfAnotherKindSaysWhichKindTakesIt) {
  expect_one_error(edit("    taps: 63", "    taps: 63\n    threshold: 0.5"), 11, 5,
                   "unknown key 'threshold' in stages[0] (it applies to kind: band_rms, not kind: fir_bank)");
  expect_one_error(edit("    threshold: 0.5", "    threshold: 0.5\n    hop_s: 0.5"), 18, 5,
                   "unknown key 'hop_s' in stages[1] (it applies to kind: vibration, not kind: band_rms)");
  expect_one_error(edit("    stream: bands", "    stream: bands\n    status_interval_s: 1"), 21, 5,
                   "unknown key 'status_interval_s' in outputs[0] (it applies to kind: events and kind: nats, not "
                   "kind: vita49)");
  // A typo still gets the nearest key of its own kind.
  expect_one_error(edit("    threshold: 0.5", "    threshold: 0.5\n    windw_s: 0.1"), 18, 5, "(did you mean 'window_s'?)");
}

TEST(ConfigLoader, AFleetOutputReadsEveryKeyAndDefaults) {
  const std::string nats = R"(
  - kind: nats
    servers: [nats://10.0.0.1:4222, "10.0.0.2:4222"]
    rig: press_7
    stream: PLANT
    types: [alarm, ae_hit]
    user: vigil
    password: secret
    ack_timeout_s: 2
    queue_events: 5000
)";
  const ConfigResult r = parse_config(std::string(kValid) + nats.substr(1), "t.yaml");
  if (!VIGIL_HAVE_NATS) {  // a vigild built without libnats refuses the kind, at it, and nothing else
    ASSERT_EQ(r.errors.size(), 1u) << format_error("t.yaml", r.errors[0]);
    EXPECT_EQ(r.errors[0].line, 24);
    EXPECT_NE(r.errors[0].message.find("built without the NATS client"), std::string::npos);
    return;
  }
  ASSERT_TRUE(r.settings.has_value()) << (r.errors.empty() ? "" : format_error("t.yaml", r.errors[0]));
  ASSERT_EQ(r.settings->fleet_outputs.size(), 1u);
  const FleetOutputSettings& f = r.settings->fleet_outputs[0];
  EXPECT_EQ(f.servers, (std::vector<std::string>{"nats://10.0.0.1:4222", "nats://10.0.0.2:4222"}));
  EXPECT_EQ(f.rig, "press_7");
  EXPECT_EQ(f.stream, "PLANT");
  EXPECT_EQ(f.types, (std::vector<std::string>{"alarm", "ae_hit"}));
  EXPECT_EQ(f.user, "vigil");
  EXPECT_EQ(f.ack_timeout_s, 2);
  EXPECT_EQ(f.queue_events, 5000u);
  EXPECT_EQ(f.bucket, "vigil_rigs");
  const ConfigResult d = parse_config(std::string(kValid) + "  - kind: nats\n", "t.yaml");
  ASSERT_TRUE(d.settings.has_value());
  EXPECT_EQ(d.settings->fleet_outputs[0].servers, (std::vector<std::string>{"nats://127.0.0.1:4222"}));
  EXPECT_EQ(d.settings->fleet_outputs[0].stream, "VIGIL");
  EXPECT_TRUE(d.settings->fleet_outputs[0].types.empty());  // every type
}

// The error a fleet output's bad value gives; in a build without libnats, after the refusal of
// the kind itself (both are reported).
void expect_fleet_error(const std::string& yaml, int line, int column, const std::string& fragment) {
  if (VIGIL_HAVE_NATS) return expect_one_error(yaml, line, column, fragment);
  const ConfigResult r = parse_config(yaml, "test.yaml");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].message.find("built without the NATS client"), std::string::npos) << r.errors[0].message;
  EXPECT_EQ(r.errors[1].line, line) << r.errors[1].message;
  EXPECT_EQ(r.errors[1].column, column) << r.errors[1].message;
  EXPECT_NE(r.errors[1].message.find(fragment), std::string::npos) << r.errors[1].message;
}

TEST(ConfigLoader, AFleetOutputsBadValuesPointAtThem) {
  const std::string base = std::string(kValid) + "  - kind: nats\n";  // outputs[2] at line 24
  expect_fleet_error(base + "    rig: press.7\n", 25, 10, "outputs[2].rig: letters, digits, '-' and '_' only");
  expect_fleet_error(base + "    servers: [http://x:80]\n", 25, 15, "expected a URL nats://host:port");
  expect_fleet_error(base + "    types: [alarm, alrm]\n", 25, 20, "'alrm' is not an event type");
  expect_fleet_error(base + "    types: [alarm, alrm]\n", 25, 20, "(did you mean 'alarm'?)");
  expect_fleet_error(base + "    user: vigil\n", 25, 11, "user and password go together");
  expect_fleet_error(base + "    subject_prefix: vigil.*\n", 25, 21, "without wildcards");
  expect_fleet_error(base + "    ca: /nonexistent/ca.pem\n", 25, 9, "cannot read '/nonexistent/ca.pem'");
  expect_fleet_error(base + "    cert: /etc/hostname\n", 25, 11, "cert and key go together");
  expect_fleet_error(base + "    destination: 127.0.0.1:1\n", 25, 5,
                   "unknown key 'destination' in outputs[2] (it applies to kind: events and kind: vita49, not kind: nats)");
}

TEST(ConfigLoader, UnknownKeySuggestsTheNearest) {
  expect_one_error(edit("  channels: 2", "  chanels: 2"), 4, 3, "did you mean 'channels'?");
  expect_one_error(edit("    taps: 63", "    tapz: 63"), 10, 5, "did you mean 'taps'?");
  expect_one_error(edit("stages:", "stagse:"), 6, 1, "did you mean 'stages'?");
}

TEST(ConfigLoader, AKeyThatIsAListOrAMappingIsNamedAsSuch) {
  expect_one_error(edit("  channels: 2", "  [channels]: 2\n  channels: 2"), 4, 3,
                   "a key in source must be a plain name, not a list");
  expect_one_error(edit("    taps: 63", "    taps: 63\n    {a: 1}: 2"), 11, 5, "must be a plain name, not a mapping");
}

TEST(ConfigLoader, UnknownKeyFarFromAnyGetsNoSuggestion) {
  const ConfigResult r = parse_config(edit("  channels: 2", "  channels: 2\n  xyzzyplugh: 1"), "t.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 5);
  EXPECT_EQ(r.errors[0].message.find("did you mean"), std::string::npos);
}

TEST(ConfigLoader, WrongTypes) {
  expect_one_error(edit("  channels: 2", "  channels: two"), 4, 13, "expected an integer, got 'two'");
  expect_one_error(edit("  rate_hz: 51200", "  rate_hz: [1]"), 3, 12, "expected a number");
  expect_one_error(edit("    threshold: 0.5", "    threshold: high"), 17, 16, "expected a number");
}

TEST(ConfigLoader, ValuesOutOfRange) {
  expect_one_error(edit("  channels: 2", "  channels: 0"), 4, 13, "source.channels must be 1..4096, got 0");
  expect_one_error(edit("  rate_hz: 51200", "  rate_hz: 0"), 3, 12, "source.rate_hz must be");
  expect_one_error(edit("    taps: 63", "    taps: 0"), 10, 11, "taps must be 1..65536, got 0");
  expect_one_error(edit("    taps: 63", "    taps: 1000000000"), 10, 11, "taps must be 1..65536");
  // A frequency's bounds exclude 0 and the Nyquist frequency: said in words, not as 1e-09..25600.
  expect_one_error(edit("cutoff_hz: 1000}\n      - {name: high", "cutoff_hz: 30000}\n      - {name: high"), 12, 47,
                   "cutoff_hz must be above 0 and below 25600, got 30000");
  expect_one_error(edit("cutoff_hz: 1000}\n      - {name: high", "cutoff_hz: 0}\n      - {name: high"), 12, 47,
                   "cutoff_hz must be above 0 and below 25600, got 0");
  expect_one_error(edit("127.0.0.1:5000", "127.0.0.1:70000"), 21, 18, "port must be 1..65535");
}

// As many channels as a data stream's id can name (12 bits), and not one more.
TEST(ConfigLoader, ChannelsUpToWhatAStreamIdCanName) {
  const ConfigResult r = parse_config(edit("  channels: 2", "  channels: 4096"), "t.yaml");
  ASSERT_TRUE(r.settings) << format_error("t.yaml", r.errors[0]);
  EXPECT_EQ(r.settings->synthetic.channels, 4096u);
  expect_one_error(edit("  channels: 2", "  channels: 4097"), 4, 13, "source.channels must be 1..4096, got 4097");
}

TEST(ConfigLoader, SendThreadsInRange) {
  expect_one_error(edit("  chunk_frames: 256", "  chunk_frames: 256\npipeline:\n  send_threads: 0"), 7, 17,
                   "pipeline.send_threads must be 1..64, got 0");
  const ConfigResult r = parse_config(edit("  chunk_frames: 256", "  chunk_frames: 256\npipeline:\n  send_threads: 4"), "t.yaml");
  ASSERT_TRUE(r.settings) << format_error("t.yaml", r.errors[0]);
  EXPECT_EQ(r.settings->pipeline.send_threads, 4u);
}

TEST(ConfigLoader, ChunkLargerThanThePoolLimit) {
  expect_one_error(edit("  chunk_frames: 256", "  chunk_frames: 1048576\npipeline:\n  pool_chunks: 1024"), 5, 17,
                   "above the pool limit");
}

TEST(ConfigLoader, GraphReferences) {
  expect_one_error(edit("    input: bands", "    input: bandz"), 16, 12, "no earlier stage with samples named 'bandz' (did you mean 'bands'?)");
  expect_one_error(edit("    stream: bands", "    stream: alarm"), 20, 13, "produces events, not samples");
  expect_one_error(edit("  - name: alarm", "  - name: bands"), 14, 11, "already used");
}

// Found by trying bad input: the references were checked only once every other error was fixed.
TEST(ConfigLoader, BrokenReferencesAreReportedWithTheOtherErrors) {
  std::string y = edit("  channels: 2", "  channels: 0");
  y.replace(y.find("    input: bands"), 16, "    input: bandz");
  y.replace(y.find("  - name: alarm"), 15, "  - name: bands");
  const ConfigResult r = parse_config(y, "t.yaml");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_NE(r.errors[0].message.find("channels"), std::string::npos) << r.errors[0].message;
  EXPECT_EQ(r.errors[1].line, 14);
  EXPECT_NE(r.errors[1].message.find("already used"), std::string::npos) << r.errors[1].message;
  EXPECT_EQ(r.errors[2].line, 16);
  EXPECT_NE(r.errors[2].message.find("no earlier stage with samples named 'bandz'"), std::string::npos)
      << r.errors[2].message;
  // A stage whose kind is in error gives no second error: not for its keys, nor to the stage and
  // the output that read it.
  expect_one_error(edit("    kind: fir_bank", "    kind: fir_bnak"), 8, 11, "did you mean 'fir_bank'?");
}

// Found by trying bad input: a name that is not UTF-8 passed, then every event naming it failed.
TEST(ConfigLoader, ANameThatIsNotUtf8IsAnErrorAtIt) {
  expect_one_error(edit("{name: high,", "{name: h\xE9gh,"), 13, 16, "'h...' is not valid UTF-8 (byte 0xE9 at offset 1)");
  expect_one_error(edit("  - name: alarm", "  - name: al\xC3\x28rm"), 14, 11, "is not valid UTF-8 (byte 0xC3 at offset 2)");
  expect_one_error(edit("  - name: alarm", "  - name: al\xC0\xAFrm"), 14, 11, "(byte 0xC0 at offset 2)");  // overlong
  expect_one_error(edit("  - name: alarm", "  - name: \xED\xA0\x80"), 14, 11, "(byte 0xED at offset 0)");  // surrogate
  expect_one_error(edit("  - name: alarm", "  - name: al\xF0\x9F"), 14, 11, "(byte 0xF0 at offset 2)");  // cut short
  // Valid UTF-8 of every length is a name like any other.
  const ConfigResult ok = parse_config(edit("{name: high,", "{name: h\xC3\xA9gh\xE2\x82\xAC\xF0\x9F\x94\xA9,"), "t.yaml");
  ASSERT_TRUE(ok.errors.empty()) << format_error("t.yaml", ok.errors[0]);
  EXPECT_EQ(std::get<FirBankSettings>(ok.settings->stages[0].params).bands[1].name, "h\xC3\xA9gh\xE2\x82\xAC\xF0\x9F\x94\xA9");
}

TEST(ConfigLoader, AVita49SourceReadsItsKeysAndPointsAtEachBadOne) {
  const std::string head = "source:\n  kind: vita49\n";
  const std::string rest = "stages: []\noutputs: []\n";
  const ConfigResult ok = parse_config(head + "  listen: \"[::]:4991\"\n  streams: [0x01000003, 16777220]\n"
                                              "  rate_hz: 204800\n  chunk_frames: 2048\n  max_wait_s: 0.05\n" + rest,
                                       "t.yaml");
  ASSERT_TRUE(ok.errors.empty()) << format_error("t.yaml", ok.errors[0]);
  const Vita49SourceSpec& v = ok.settings->vita49;
  EXPECT_EQ(ok.settings->source_kind, "vita49");
  EXPECT_EQ(v.listen_host, "::");
  EXPECT_EQ(v.listen_port, 4991);
  EXPECT_EQ(v.streams, (std::vector<uint32_t>{0x01000003, 0x01000004}));
  EXPECT_EQ(v.rate_hz, 204800);
  EXPECT_EQ(v.chunk_frames, 2048u);
  EXPECT_FALSE(v.format.has_value());
  EXPECT_EQ(ok.settings->synthetic.channels, 2u);  // what the stages are checked against
  EXPECT_EQ(ok.settings->synthetic.rate_hz, 204800);
  auto one = [&](const std::string& body, int line, int column, const std::string& fragment) {
    expect_one_error(head + body + rest, line, column, fragment);
  };
  one("  streams: [1]\n  rate_hz: 48000\n", 2, 3, "missing required key 'listen'");
  one("  listen: 0.0.0.0:4991\n", 2, 3, "missing required key 'rate_hz'");
  one("  listen: 0.0.0.0:4991\n  rate_hz: 48000\n  streams: [1, 0x1]\n", 5, 16, "stream 0x1 is listed twice");
  one("  listen: 0.0.0.0:4991\n  rate_hz: 48000\n  streams: [1, -2]\n", 5, 16, "expected a 32-bit stream id");
  one("  listen: 0.0.0.0:4991\n  rate_hz: 48000\n  streams: [0x100000000]\n", 5, 13, "expected a 32-bit stream id");
  one("  listen: 0.0.0.0:4991\n  rate_hz: 48000\n  streams: [1]\n  channels: 2\n", 6, 13, "give one or the other");
  one("  listen: 127.0.0.1:4991\n  rate_hz: 48000\n  interface: eth0\n", 5, 14, "applies to a multicast group");
  one("  listen: 127.0.0.1\n  rate_hz: 48000\n", 3, 11, "source.listen");
  one("  listen: 0.0.0.0:4991\n  rate_hz: 48000\n  format: int24\n", 5, 11, "must be one of int16, int32, float32");
  one("  listen: 0.0.0.0:4991\n  rate_hz: 48000\n  period_frames: 64\n", 5, 3, "unknown key 'period_frames'");
}

TEST(ConfigLoader, AnIioSourceReadsItsKeysAndPointsAtEachBadOne) {
  const std::string head = "source:\n  kind: iio\n";
  const std::string rest = "stages: []\noutputs: []\n";
  const ConfigResult ok = parse_config(head + "  uri: ip:192.168.2.1\n  device: ad7768-1\n  channels: [voltage0, voltage1]\n"
                                              "  sample_rate_hz: 256000\n  chunk_frames: 4096\n  kernel_buffers: 8\n" + rest,
                                       "t.yaml");
  if (!VIGIL_HAVE_IIO) {  // a vigild without libiio refuses the kind, at it
    ASSERT_EQ(ok.errors.size(), 1u);
    EXPECT_EQ(ok.errors[0].line, 2);
    EXPECT_NE(ok.errors[0].message.find("built without libiio"), std::string::npos);
    return;
  }
  ASSERT_TRUE(ok.errors.empty()) << format_error("t.yaml", ok.errors[0]);
  const IioSourceSpec& io = ok.settings->iio;
  EXPECT_EQ(io.uri, "ip:192.168.2.1");
  EXPECT_EQ(io.device, "ad7768-1");
  EXPECT_EQ(io.channels, (std::vector<std::string>{"voltage0", "voltage1"}));
  EXPECT_EQ(io.sample_rate_hz, 256000);
  EXPECT_EQ(io.chunk_frames, 4096u);
  EXPECT_EQ(io.kernel_buffers, 8u);
  EXPECT_EQ(ok.settings->synthetic.channels, 2u);
  auto one = [&](const std::string& body, int line, int column, const std::string& fragment) {
    expect_one_error(head + body + rest, line, column, fragment);
  };
  const std::string dev = "  device: adc0\n  sample_rate_hz: 48000\n";
  one(dev, 2, 3, "missing required key 'channels'");
  one(dev + "  channels: [voltage0, voltage0]\n", 5, 24, "voltage0 is listed twice");
  one(dev + "  channels: [voltage0, \"in voltage1\"]\n", 5, 24, "expected a channel id");
  one(dev + "  channels: []\n", 5, 13, "expected a list of 1..4096 channel ids");
  one(dev + "  channels: [voltage0]\n  uri: serial:/dev/ttyUSB0\n", 6, 8, "expected local:, ip:HOST or usb:");
  one(dev + "  channels: [voltage0]\n  rate_hz: 48000\n", 6, 3, "an IIO source takes sample_rate_hz");
  one(dev + "  channels: [voltage0]\n  kernel_buffers: 0\n", 6, 19, "source.kernel_buffers must be 1..64");
  one("  device: adc0\n  channels: [voltage0]\n", 2, 3, "missing required key 'sample_rate_hz'");
}

TEST(ConfigLoader, BandRules) {
  expect_one_error(edit("    taps: 63", "    taps: 64"), 13, 28, "needs an odd number of taps");
  expect_one_error(edit("{name: high, type: highpass", "{name: low, type: highpass"), 13, 16, "listed twice");
  expect_one_error(edit("type: lowpass", "type: lowpas"), 12, 27, "did you mean 'lowpass'?");
}

TEST(ConfigLoader, SeveralErrorsAreAllReportedInOrder) {
  std::string y = edit("  channels: 2", "  channels: 0");
  y.replace(y.find("    taps: 63"), 12, "    taps: -1");
  const ConfigResult r = parse_config(y, "t.yaml");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_EQ(r.errors[1].line, 10);
  EXPECT_EQ(format_error("t.yaml", r.errors[0]).rfind("t.yaml:4:13: ", 0), 0u);
}

TEST(ConfigLoader, EmptyAndUnreadableFiles) {
  const ConfigResult empty = parse_config("", "e.yaml");
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_NE(empty.errors[0].message.find("empty"), std::string::npos);
  const ConfigResult missing = load_config_file("/nonexistent/vigil.yaml");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0].line, 0);
  EXPECT_EQ(format_error("/nonexistent/vigil.yaml", missing.errors[0]).rfind("/nonexistent/vigil.yaml: cannot read", 0), 0u);
  // A directory (a path one level short) is named as such, not as an empty file.
  const std::string dir = std::string(VIGIL_SOURCE_DIR) + "/config";
  const ConfigResult directory = load_config_file(dir);
  ASSERT_EQ(directory.errors.size(), 1u);
  EXPECT_EQ(format_error(dir, directory.errors[0]), dir + ": is a directory, not a config file");
}

TEST(ConfigLoader, Endpoints) {
  Endpoint ep;
  std::string why;
  EXPECT_TRUE(parse_endpoint("localhost:4991", ep, why));
  EXPECT_EQ(ep.host, "localhost");
  EXPECT_EQ(ep.port, 4991);
  EXPECT_TRUE(parse_endpoint("[fe80::1]:1", ep, why));
  EXPECT_EQ(ep.host, "fe80::1");
  EXPECT_FALSE(parse_endpoint("localhost", ep, why));
  EXPECT_FALSE(parse_endpoint(":4991", ep, why));
  EXPECT_FALSE(parse_endpoint("host:0", ep, why));
  EXPECT_FALSE(parse_endpoint("host:abc", ep, why));
  EXPECT_FALSE(parse_endpoint("::1:4991", ep, why));
}

TEST(ConfigLoader, NearestKey) {
  EXPECT_EQ(nearest_key("chanels", {"channels", "format"}), "channels");
  EXPECT_EQ(nearest_key("zzzzzz", {"rate_hz"}), "");
  EXPECT_EQ(nearest_key("rate_h", {"rate_hz"}), "rate_hz");
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

TEST(ConfigLoader, CrossoverBands) {
  std::string y = kValid;
  const std::string bands = "    bands:\n      - {name: low, type: lowpass, cutoff_hz: 1000}\n      - {name: high, type: highpass, cutoff_hz: 1000}\n";
  y.replace(y.find(bands), bands.size(), "    crossover_hz: [500, 4000]\n    band_names: [lo, mid, hi]\n");
  const ConfigResult r = parse_config(y, "x.yaml");
  ASSERT_TRUE(r.errors.empty()) << format_error("x.yaml", r.errors[0]);
  const auto& fir = std::get<FirBankSettings>(r.settings->stages[0].params);
  EXPECT_EQ(fir.crossover_hz, (std::vector<double>{500, 4000}));
  ASSERT_EQ(fir.bands.size(), 3u);
  EXPECT_EQ(fir.bands[2].name, "hi");

  std::string wrong_names = y;
  wrong_names.replace(wrong_names.find("[lo, mid, hi]"), 13, "[lo, hi]");
  expect_one_error(wrong_names, 12, 17, "expected a list of 3 names");
  std::string descending = y;
  descending.replace(descending.find("[500, 4000]"), 11, "[4000, 500]");
  expect_one_error(descending, 11, 26, "ascending order");
}

// fft_planning: estimate by default, measure when asked, anything else named at its position.
TEST(ConfigLoader, FftPlanning) {
  const ConfigResult plain = parse_config(kValid, "x.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(std::get<FirBankSettings>(plain.settings->stages[0].params).fft_planning, FftPlanning::kEstimate);
  const ConfigResult measured = parse_config(edit("    taps: 63\n", "    taps: 63\n    fft_planning: measure\n"), "x.yaml");
  ASSERT_TRUE(measured.errors.empty()) << format_error("x.yaml", measured.errors[0]);
  EXPECT_EQ(std::get<FirBankSettings>(measured.settings->stages[0].params).fft_planning, FftPlanning::kMeasure);
  const ConfigResult patient = parse_config(edit("    taps: 63\n", "    taps: 63\n    fft_planning: patient\n"), "x.yaml");
  ASSERT_TRUE(patient.errors.empty()) << format_error("x.yaml", patient.errors[0]);
  EXPECT_EQ(std::get<FirBankSettings>(patient.settings->stages[0].params).fft_planning, FftPlanning::kPatient);
  expect_one_error(edit("    taps: 63\n", "    taps: 63\n    fft_planning: measured\n"), 11, 19, "did you mean 'measure'");
  const ConfigResult wisdom =
      parse_config(edit("  chunk_frames: 256\n", "  chunk_frames: 256\npipeline:\n  fft_wisdom: /var/cache/w\n"), "x.yaml");
  ASSERT_TRUE(wisdom.errors.empty()) << format_error("x.yaml", wisdom.errors[0]);
  EXPECT_EQ(wisdom.settings->pipeline.fft_wisdom, "/var/cache/w");
  EXPECT_EQ(plain.settings->pipeline.fft_wisdom, "");
}

// form: auto by default; direct or fft when asked; direct refused past the GPU kernel's 4096
// taps, at the key's position.
TEST(ConfigLoader, FirForm) {
  const ConfigResult plain = parse_config(kValid, "x.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(std::get<FirBankSettings>(plain.settings->stages[0].params).form, FirForm::kAuto);
  for (const auto& [word, form] : {std::pair{"direct", FirForm::kDirect}, std::pair{"fft", FirForm::kFft},
                                   std::pair{"auto", FirForm::kAuto}}) {
    const ConfigResult r = parse_config(edit("    taps: 63\n", std::string("    taps: 63\n    form: ") + word + "\n"), "x.yaml");
    ASSERT_TRUE(r.errors.empty()) << format_error("x.yaml", r.errors[0]);
    EXPECT_EQ(std::get<FirBankSettings>(r.settings->stages[0].params).form, form) << word;
  }
  expect_one_error(edit("    taps: 63\n", "    taps: 63\n    form: fir\n"), 11, 11, "one of auto, direct, fft, got 'fir'");
  // Any length in direct form (both backends' direct forms carry up to 65 535 samples of history).
  const ConfigResult direct_long = parse_config(edit("    taps: 63\n", "    taps: 8191\n    form: direct\n"), "x.yaml");
  EXPECT_TRUE(direct_long.errors.empty()) << format_error("x.yaml", direct_long.errors[0]);
  const ConfigResult fft_long = parse_config(edit("    taps: 63\n", "    taps: 4097\n    form: fft\n"), "x.yaml");
  EXPECT_TRUE(fft_long.errors.empty()) << format_error("x.yaml", fft_long.errors[0]);
}

TEST(ConfigLoader, GpuResidentIsOnUnlessTurnedOff) {
  const ConfigResult plain = parse_config(kValid, "x.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_TRUE(plain.settings->pipeline.gpu_resident);
  const ConfigResult off = parse_config(edit("  chunk_frames: 256\n", "  chunk_frames: 256\npipeline:\n  gpu_resident: false\n"), "x.yaml");
  ASSERT_TRUE(off.errors.empty()) << format_error("x.yaml", off.errors[0]);
  EXPECT_FALSE(off.settings->pipeline.gpu_resident);
  expect_one_error(edit("  chunk_frames: 256\n", "  chunk_frames: 256\npipeline:\n  gpu_resident: maybe\n"), 7, 17,
                   "expected");
}

TEST(ConfigLoader, SyntheticCopyThreadsAreReadAndChecked) {
  EXPECT_EQ(parse_config(kValid, "x.yaml").settings->synthetic.copy_threads, 0u);
  const ConfigResult set = parse_config(edit("  chunk_frames: 256\n", "  chunk_frames: 256\n  copy_threads: 6\n"), "x.yaml");
  ASSERT_TRUE(set.errors.empty()) << format_error("x.yaml", set.errors[0]);
  EXPECT_EQ(set.settings->synthetic.copy_threads, 6u);
  expect_one_error(edit("  chunk_frames: 256\n", "  chunk_frames: 256\n  copy_threads: 65\n"), 6, 17, "copy_threads");
}

TEST(ConfigLoader, CudaGraphsNameWhichStagesReplayGraphs) {
  const ConfigResult plain = parse_config(kValid, "x.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(plain.settings->pipeline.cuda_graphs, "fir_bank");
  for (const char* v : {"all", "off"}) {
    const ConfigResult set = parse_config(
        edit("  chunk_frames: 256\n", std::string("  chunk_frames: 256\npipeline:\n  cuda_graphs: ") + v + "\n"), "x.yaml");
    ASSERT_TRUE(set.errors.empty()) << format_error("x.yaml", set.errors[0]);
    EXPECT_EQ(set.settings->pipeline.cuda_graphs, v);
  }
  expect_one_error(edit("  chunk_frames: 256\n", "  chunk_frames: 256\npipeline:\n  cuda_graphs: some\n"), 7, 16,
                   "cuda_graphs");
}

// pipeline.gpus: auto, or the devices a CUDA stage's channels are split over (one may repeat);
// a mistake named at the entry.
TEST(ConfigLoader, GpusIsAutoOrAListOfDevices) {
  const ConfigResult plain = parse_config(kValid, "x.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_TRUE(plain.settings->pipeline.gpus.empty());
  EXPECT_FALSE(plain.settings->pipeline.gpus_auto);
  auto with = [](const std::string& v) {
    return edit("  chunk_frames: 256\n", "  chunk_frames: 256\npipeline:\n  gpus: " + v + "\n");
  };
  const ConfigResult listed = parse_config(with("[0, 0, 3]"), "x.yaml");
  ASSERT_TRUE(listed.errors.empty()) << format_error("x.yaml", listed.errors[0]);
  EXPECT_EQ(listed.settings->pipeline.gpus, (std::vector<int>{0, 0, 3}));
  const ConfigResult any = parse_config(with("auto"), "x.yaml");
  ASSERT_TRUE(any.errors.empty()) << format_error("x.yaml", any.errors[0]);
  EXPECT_TRUE(any.settings->pipeline.gpus_auto);
  expect_one_error(with("[0, one]"), 7, 13, "gpus[1]: expected a device number");
  expect_one_error(with("[0, -1]"), 7, 13, "gpus[1]");
  expect_one_error(with("[]"), 7, 9, "expected auto or a list");
  expect_one_error(with("all"), 7, 9, "expected auto or a list");
  expect_one_error(with("{a: 1}"), 7, 9, "expected auto or a list");
}

TEST(ConfigLoader, GpuKeepWarmIsAutoTrueOrFalse) {
  const ConfigResult plain = parse_config(kValid, "x.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(plain.settings->pipeline.gpu_keep_warm, "auto");  // with busy_poll
  for (const char* v : {"true", "false", "auto"}) {
    const ConfigResult set = parse_config(
        edit("  chunk_frames: 256\n", std::string("  chunk_frames: 256\npipeline:\n  gpu_keep_warm: ") + v + "\n"),
        "x.yaml");
    ASSERT_TRUE(set.errors.empty()) << format_error("x.yaml", set.errors[0]);
    EXPECT_EQ(set.settings->pipeline.gpu_keep_warm, v);
  }
  expect_one_error(edit("  chunk_frames: 256\n", "  chunk_frames: 256\npipeline:\n  gpu_keep_warm: always\n"), 7, 18,
                   "gpu_keep_warm");
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

const char* kDetectors = R"(source: {rate_hz: 51200, channels: 2, chunk_frames: 1024}
stages:
  - name: hits
    kind: ae_hits
    input: input
    threshold_db: 45
    hdt_us: 800
    full_scale_v: 10
  - name: vib
    kind: vibration
    input: input
    window_s: 1.0
    full_scale_v: 10
    sensitivity_mv_per_g: 100
    velocity: true
    iso_20816: {group: 1, foundation: flexible}
    envelope:
      low_hz: 2000
      high_hz: 8000
      shaft_hz: 25
      bearing: {rollers: 9, roller_diameter_mm: 7.94, pitch_diameter_mm: 39.04}
    rules:
      - {name: velocity, metric: velocity_rms, alert: 7.1, danger: 11}
      - {name: outer race, metric: bpfo, alert: 0.5, on_delay_s: 10, latch: true}
)";

std::string edit_detectors(const std::string& from, const std::string& to) {
  std::string s = kDetectors;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(ConfigLoader, MetricsListenOnLoopbackUnlessAllowed) {
  const std::string base = "source: {rate_hz: 8000, channels: 1, chunk_frames: 80}\n";
  ConfigResult r = parse_config(base + "metrics: {listen: \"127.0.0.1:9102\"}\n", "m.yaml");
  ASSERT_TRUE(r.settings);
  EXPECT_TRUE(r.settings->metrics.enabled);
  EXPECT_EQ(r.settings->metrics.listen.port, 9102);
  r = parse_config(base, "m.yaml");
  ASSERT_TRUE(r.settings);
  EXPECT_FALSE(r.settings->metrics.enabled);  // off by default
  r = parse_config(base + "metrics: {listen: \"0.0.0.0:9102\"}\n", "m.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[0].column, 19);
  EXPECT_NE(r.errors[0].message.find("not a loopback address; set allow_non_loopback"), std::string::npos);
  r = parse_config(base + "metrics: {listen: \"0.0.0.0:9102\", allow_non_loopback: true}\n", "m.yaml");
  EXPECT_TRUE(r.settings);
}

TEST(ConfigLoader, HealthSection) {
  const std::string base = "source: {rate_hz: 8000, channels: 1, chunk_frames: 80}\n";
  ConfigResult r = parse_config(base, "h.yaml");
  ASSERT_TRUE(r.settings);
  const HealthSettings defaults;
  EXPECT_TRUE(r.settings->health.enabled);  // on by default
  EXPECT_EQ(r.settings->health, defaults);
  EXPECT_EQ(defaults.sysfs_root, "/sys");
  EXPECT_EQ(defaults.temperature_alarm_c, 90);
  EXPECT_EQ(defaults.temperature_clear_c, 85);
  EXPECT_EQ(defaults.throttle_reference, "auto");
  r = parse_config(base + "health: {enabled: false, sysfs_root: /tmp/sys, interval_s: 5, temperature_alarm_c: 80,\n"
                          "         throttle_alarm: false, throttle_reference: start, throttle_clear_s: 30}\n", "h.yaml");
  ASSERT_TRUE(r.settings) << format_error("h.yaml", r.errors[0]);
  const HealthSettings& h = r.settings->health;
  EXPECT_FALSE(h.enabled);
  EXPECT_EQ(h.sysfs_root, "/tmp/sys");
  EXPECT_EQ(h.interval_s, 5);
  EXPECT_EQ(h.temperature_alarm_c, 80);
  EXPECT_EQ(h.temperature_clear_c, 75);  // follows the alarm level it was not given with
  EXPECT_FALSE(h.throttle_alarm);
  EXPECT_EQ(h.throttle_reference, "start");
  EXPECT_EQ(h.throttle_clear_s, 30);
  r = parse_config(base + "health: {temperature_alarm_c: 70, temperature_clear_c: 60}\n", "h.yaml");
  ASSERT_TRUE(r.settings);
  EXPECT_EQ(r.settings->health.temperature_clear_c, 60);
  expect_one_error(base + "health: {temperature_alarm_c: 70, temperature_clear_c: 70}\n", 2, 56,
                   "health.temperature_clear_c (70) must be below temperature_alarm_c (70)");
  expect_one_error(base + "health: {interval_s: 0.5}\n", 2, 22, "health.interval_s must be 1..3600, got 0.5");
  expect_one_error(base + "health: {throttle_reference: hardwere}\n", 2, 30,
                   "health.throttle_reference must be one of auto, hardware, start, got 'hardwere' (did you mean 'hardware'?)");
  expect_one_error(base + "health: {sysfs: /x}\n", 2, 10, "unknown key 'sysfs' in health");
  expect_one_error(base + "health: [1]\n", 2, 9, "health: expected a mapping");
}

// The hosts the config names, where it names them: what `vigild --check-config` looks up.
TEST(ConfigLoader, HostsAreListedWithTheirPlaces) {
  const ConfigResult r = parse_config("source: {rate_hz: 8000, channels: 1, chunk_frames: 80}\n"
                                      "outputs:\n"
                                      "  - {kind: vita49, stream: input, destination: \"rig-a.example:4991\"}\n"
                                      "  - kind: events\n"
                                      "    destination: \"[::1]:4992\"\n"
                                      "  - {kind: events, destination: \"239.1.2.3:4993\", multicast_interface: eth7}\n"
                                      "metrics: {listen: \"localhost:9102\"}\n",
                                      "h.yaml");
  ASSERT_TRUE(r.settings);
  using Use = HostPlace::Use;
  const std::vector<HostPlace> expected = {{"rig-a.example", "outputs[0].destination", 3, 48, Use::kDestination},
                                           {"::1", "outputs[1].destination", 5, 18, Use::kDestination},
                                           {"239.1.2.3", "outputs[2].destination", 6, 33, Use::kDestination},
                                           {"eth7", "outputs[2].multicast_interface", 6, 72, Use::kInterface},
                                           {"localhost", "metrics.listen", 7, 19, Use::kListen}};
  ASSERT_EQ(r.hosts.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.hosts[i].host, expected[i].host) << i;
    EXPECT_EQ(r.hosts[i].where, expected[i].where) << i;
    EXPECT_EQ(r.hosts[i].line, expected[i].line) << i;
    EXPECT_EQ(r.hosts[i].column, expected[i].column) << i;
    EXPECT_EQ(r.hosts[i].use, expected[i].use) << i;
  }
}

// Multicast keys: read for a multicast destination; elsewhere, or malformed, an error at the key.
TEST(ConfigLoader, MulticastKeysApplyToAMulticastDestination) {
  const std::string base = "source: {rate_hz: 8000, channels: 1, chunk_frames: 80}\noutputs:\n";
  ConfigResult r = parse_config(base + "  - {kind: vita49, stream: input, destination: \"239.1.2.3:4991\",\n"
                                       "     multicast_interface: eth1, multicast_ttl: 4, multicast_loop: false}\n"
                                       "  - {kind: events, destination: \"[ff15::9]:4992\"}\n",
                                "m.yaml");
  ASSERT_TRUE(r.settings) << format_error("m.yaml", r.errors[0]);
  EXPECT_EQ(r.settings->data_outputs[0].multicast, (MulticastSettings{"eth1", 4, false}));
  EXPECT_EQ(r.settings->event_outputs[0].multicast, MulticastSettings{});  // TTL 1, loop on, the route's interface
  const std::string unicast = base + "  - {kind: events, destination: \"10.0.0.5:4992\", multicast_ttl: 2}\n";
  expect_one_error(unicast, 3, 65,
                   "outputs[0].multicast_ttl applies to a multicast destination (224.0.0.0/4 or ff00::/8, given as "
                   "an address), not 10.0.0.5");
  expect_one_error(base + "  - {kind: events, destination: \"239.1.2.3:4992\", multicast_interface: 10.0.0}\n", 3, 72,
                   "outputs[0].multicast_interface: expected an interface's IPv4 address or its name (eth1), "
                   "got '10.0.0'");
  expect_one_error(base + "  - {kind: events, destination: \"[ff15::9]:4992\", multicast_interface: 10.0.0.1}\n",
                   3, 72, "an IPv6 group takes an interface name (eth1), not an IPv4 address");
  expect_one_error(base + "  - {kind: events, destination: \"239.1.2.3:4992\", multicast_ttl: 256}\n", 3, 66,
                   "outputs[0].multicast_ttl must be 0..255, got 256");
}

TEST(ConfigLoader, RecordSection) {
  const std::string base = "source: {rate_hz: 8000, channels: 1, chunk_frames: 80}\n";
  ConfigResult r = parse_config(base, "r.yaml");
  ASSERT_TRUE(r.settings);
  EXPECT_FALSE(r.settings->record.enabled);  // off by default
  EXPECT_EQ(r.settings->config_sha256, sha256_hex(base));  // of the file's bytes, as sha256sum gives
  EXPECT_NE(parse_config(base + "\n", "r.yaml").settings->config_sha256, r.settings->config_sha256);
  r = parse_config(base + "record: {directory: /tmp/x, prefix: rig, max_file_mib: 64, max_file_s: 600,\n"
                          "         max_total_mib: 1024, when_full: stop, buffer_chunks: 16}\n", "r.yaml");
  ASSERT_TRUE(r.settings) << format_error("r.yaml", r.errors[0]);
  const RecordSettings& rec = r.settings->record;
  EXPECT_TRUE(rec.enabled);
  EXPECT_EQ(rec.directory, "/tmp/x");
  EXPECT_EQ(rec.prefix, "rig");
  EXPECT_EQ(rec.max_file_mib, 64);
  EXPECT_EQ(rec.max_file_s, 600);
  EXPECT_EQ(rec.max_total_mib, 1024);
  EXPECT_EQ(rec.when_full, "stop");
  EXPECT_EQ(rec.buffer_chunks, 16u);
  expect_one_error(base + "record: {prefix: rig}\n", 2, 9, "record: missing required key 'directory'");
  expect_one_error(base + "record: {directory: /d, prefix: a/b}\n", 2, 33, "record.prefix: must be a plain file name");
  expect_one_error(base + "record: {directory: /d, max_file_mib: 100, max_total_mib: 10}\n", 2, 59,
                   "record.max_total_mib (10) must be at least max_file_mib (100)");
  expect_one_error(base + "record: {directory: /d, when_full: wrap}\n", 2, 36, "record.when_full must be one of");
  expect_one_error(base + "record: {directory: /d, max_file: 5}\n", 2, 25, "unknown key 'max_file' in record");
}

TEST(ConfigLoader, DetectorStagesLoad) {
  const ConfigResult r = parse_config(kDetectors, "d.yaml");
  ASSERT_TRUE(r.settings) << format_error("d.yaml", r.errors[0]);
  const auto& ae = std::get<AeHitSettings>(r.settings->stages[0].params);
  EXPECT_EQ(ae.threshold_db, 45);
  EXPECT_NEAR(ae.hdt_s, 800e-6, 1e-15);
  EXPECT_NEAR(ae.pdt_s, 200e-6, 1e-15);  // default
  const auto& v = std::get<VibrationStageSettings>(r.settings->stages[1].params);
  EXPECT_NEAR(v.analysis.sensitivity_v_per_ms2, 0.1 / 9.80665, 1e-15);
  EXPECT_EQ(v.analysis.zones.bc, 7.1);  // group 1, flexible
  EXPECT_NEAR(v.analysis.defects.bpfo, 3.585 * 25, 0.03);
  ASSERT_EQ(v.rules.size(), 2u);
  EXPECT_EQ(v.rules[1].metric, VibrationMetric::kBpfo);
  EXPECT_TRUE(v.rules[1].levels.latch);
  EXPECT_EQ(v.analysis.hop_s, 0.5);  // default: half the window
}

TEST(ConfigLoader, DetectorErrorsPointAtTheirNode) {
  expect_one_error_in(edit_detectors("metric: bpfo", "metric: bpf0"), 24, 36, "did you mean 'bpfo'?");
  expect_one_error_in(edit_detectors("alert: 7.1, danger: 11", "alert: 7.1, danger: 5"), 23, 68,
                      "danger must be at least alert");
  // The stage map (line 9) for what only the rate decides; the key itself otherwise.
  expect_one_error_in(edit_detectors("    window_s: 1.0", "    window_s: 0.05"), 9, 5, "the velocity band must lie");
  expect_one_error_in(edit_detectors("    hdt_us: 800", "    hdt_us: -1"), 7, 13, "hdt_us must be 0..");
  expect_one_error_in(edit_detectors("    threshold_db: 45\n", "    threshold_db: 45\n    floating_margin_db: 6\n    floating_window_s: 0.0001\n"),
                      3, 5, "floating_window_s (in samples) must be 32..");
  // Velocity off: the zones and the rule on velocity_rms both say why.
  const ConfigResult r = parse_config(edit_detectors("    velocity: true", "    velocity: false"), "d.yaml");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].line, 16);
  EXPECT_NE(r.errors[0].message.find("zones grade velocity"), std::string::npos) << r.errors[0].message;
  EXPECT_EQ(r.errors[1].line, 23);
  EXPECT_NE(r.errors[1].message.find("'velocity_rms' is not computed: enable velocity"), std::string::npos)
      << r.errors[1].message;
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// A wavelet_denoise stage after the FIR bank: its settings, and each bad value at its place.
std::string with_denoise(const std::string& body) {
  return edit("  - name: alarm\n", "  - name: den\n    kind: wavelet_denoise\n    input: bands\n" + body +
                                       "  - name: alarm\n");
}

TEST(ConfigLoader, WaveletDenoiseStage) {
  const ConfigResult r =
      parse_config(with_denoise("    wavelet: sym8\n    levels: 5\n    mode: hard\n    noise: per-level\n    window: 2048\n"),
                   "test.yaml");
  ASSERT_TRUE(r.errors.empty()) << format_error("test.yaml", r.errors[0]);
  const auto& d = std::get<DenoiseStageSettings>(r.settings->stages[1].params);
  EXPECT_EQ(d.wavelet, "sym8");
  EXPECT_EQ(d.levels, 5u);
  EXPECT_EQ(d.mode, ThresholdMode::kHard);
  EXPECT_EQ(d.noise, NoiseEstimate::kPerLevel);
  EXPECT_EQ(d.window, 2048u);
  // Defaults: db8, deepest level, soft, finest, 1024.
  const ConfigResult dflt = parse_config(with_denoise(""), "test.yaml");
  ASSERT_TRUE(dflt.errors.empty()) << format_error("test.yaml", dflt.errors[0]);
  EXPECT_EQ(std::get<DenoiseStageSettings>(dflt.settings->stages[1].params), DenoiseStageSettings{});
  // Its output is a sample stream: an output may send it.
  EXPECT_TRUE(parse_config(with_denoise("").replace(with_denoise("").find("stream: bands"), 13, "stream: den"),
                           "test.yaml").errors.empty());

  expect_one_error(with_denoise("    wavelet: db99\n"), 17, 14, "unknown wavelet 'db99' (haar, db1..db20, sym2..sym20)");
  expect_one_error(with_denoise("    window: 1000\n"), 17, 13, "window must be a power of two, got 1000");
  expect_one_error(with_denoise("    window: 64\n    levels: 7\n"), 18, 13, "levels");
  expect_one_error(with_denoise("    mode: medium\n"), 17, 11, "mode must be one of soft, hard");
  expect_one_error(with_denoise("    optional: true\n"), 17, 15, "a wavelet_denoise feeds later stages");
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// Decimation on a vita49 output: only of a fir_bank stream whose bands all lie under the new
// Nyquist (kValid: 51.2 kHz, bands lowpass 1000 Hz and highpass 1000 Hz).
TEST(ConfigLoader, DecimationOnlyWhereItCannotAlias) {
  const std::string lowpass_only = edit("      - {name: high, type: highpass, cutoff_hz: 1000}\n", "");
  auto with = [&](const std::string& base, const std::string& dec) {
    std::string s = base;
    const size_t at = s.find("    destination: 127.0.0.1:5000\n");
    return s.insert(at, "    decimation: " + dec + "\n");
  };
  const ConfigResult ok = parse_config(with(lowpass_only, "16"), "test.yaml");  // Nyquist 1600 Hz
  ASSERT_TRUE(ok.errors.empty()) << format_error("test.yaml", ok.errors[0]);
  EXPECT_EQ(ok.settings->data_outputs[0].decimation, 16u);
  expect_one_error(with(lowpass_only, "32"), 20, 17,
                   "decimation: 32 puts the Nyquist frequency at 800 Hz, but band 'low' of 'bands' reaches 1000 Hz");
  expect_one_error(with(kValid, "2"), 21, 17, "band 'high' of 'bands' reaches the input's Nyquist");
  expect_one_error(with(kValid, "0"), 21, 17, "decimation must be 1..1024, got 0");
  std::string raw = with(lowpass_only, "4");
  raw.replace(raw.find("stream: bands"), 13, "stream: input");
  expect_one_error(raw, 20, 17, "only a fir_bank stream can be decimated");
}

// framing on an events output: none (the default) or lines, with jumbo.
TEST(ConfigLoader, EventFramingIsNoneOrLines) {
  const ConfigResult plain = parse_config(kValid, "test.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(plain.settings->event_outputs[0].framing, "none");
  EXPECT_FALSE(plain.settings->event_outputs[0].jumbo);
  const ConfigResult ok =
      parse_config(edit("    destination: \"[::1]:5001\"\n", "    destination: \"[::1]:5001\"\n    framing: lines\n    jumbo: true\n"),
                   "test.yaml");
  ASSERT_TRUE(ok.errors.empty()) << format_error("test.yaml", ok.errors[0]);
  EXPECT_EQ(ok.settings->event_outputs[0].framing, "lines");
  EXPECT_TRUE(ok.settings->event_outputs[0].jumbo);
  expect_one_error(edit("    destination: \"[::1]:5001\"\n", "    destination: \"[::1]:5001\"\n    framing: vrl\n"), 24, 14,
                   "framing must be one of none, lines, got 'vrl'");
}

// framing on a vita49 output: none (the default) or vrl; anything else named where it is.
TEST(ConfigLoader, FramingIsNoneOrVrl) {
  const ConfigResult plain = parse_config(kValid, "test.yaml");
  ASSERT_TRUE(plain.errors.empty());
  EXPECT_EQ(plain.settings->data_outputs[0].framing, "none");
  const std::string vrl = edit("    destination: 127.0.0.1:5000\n", "    destination: 127.0.0.1:5000\n    framing: vrl\n");
  const ConfigResult ok = parse_config(vrl, "test.yaml");
  ASSERT_TRUE(ok.errors.empty()) << format_error("test.yaml", ok.errors[0]);
  EXPECT_EQ(ok.settings->data_outputs[0].framing, "vrl");
  expect_one_error(edit("    destination: 127.0.0.1:5000\n", "    destination: 127.0.0.1:5000\n    framing: vrt\n"), 22,
                   14, "framing must be one of none, vrl, got 'vrt'");
}

}  // namespace
}  // namespace vigil

namespace vigil {
namespace {

// An ae_locate stage after the ae_hits stage of kDetectors (2 channels): a pipe of two sensors.
std::string with_locate(const std::string& stage) { return edit_detectors("  - name: vib\n", stage + "  - name: vib\n"); }

const char* kPipe = "  - name: where\n    kind: ae_locate\n    input: hits\n    geometry:\n      kind: linear\n"
                    "      velocity_m_s: 5100\n      sensors: [{x_m: 0, y_m: 0}, {x_m: 3, y_m: 0}]\n"
                    "      event_lockout_s: 0.002\n      cluster_cell_m: 0.1\n";

TEST(ConfigLoader, AnAeLocateStageReadsItsGeometryInlineOrFromAFile) {
  ConfigResult r = parse_config(with_locate(kPipe), "d.yaml");
  ASSERT_TRUE(r.settings) << format_error("d.yaml", r.errors[0]);
  const StageSettings& st = r.settings->stages[1];
  EXPECT_EQ(st.kind, "ae_locate");
  EXPECT_EQ(st.input, "hits");
  const auto& loc = std::get<AeLocateSettings>(st.params);
  EXPECT_EQ(loc.geometry.kind, AeLocationKind::kLinear);
  EXPECT_EQ(loc.geometry.velocity_m_s, 5100);
  ASSERT_EQ(loc.geometry.sensors.size(), 2u);
  EXPECT_EQ(loc.geometry.sensors[1].x, 3);
  EXPECT_EQ(loc.geometry.event_lockout_s, 0.002);
  EXPECT_EQ(loc.cluster_cell_m, 0.1);
  EXPECT_FALSE(loc.timing_uncertainty_set);
  EXPECT_TRUE(loc.geometry_file.empty());
  // Hits settle over the input stage's longest hit (default 100 ms) and its HDT (800 us).
  EXPECT_NEAR(loc.hits_settle_s, 0.1 + 800e-6, 1e-12);

  const std::string file = testing::TempDir() + "/vigil-geometry-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "kind: linear\nvelocity_m_s: 3000\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 1, y_m: 0.5}\n";
  r = parse_config(with_locate("  - {name: where, kind: ae_locate, input: hits, geometry: " + file + "}\n"), "d.yaml");
  ASSERT_TRUE(r.settings) << format_error("d.yaml", r.errors[0]);
  const auto& from_file = std::get<AeLocateSettings>(r.settings->stages[1].params);
  EXPECT_EQ(from_file.geometry_file, file);
  EXPECT_EQ(from_file.geometry.kind, AeLocationKind::kLinear);
  EXPECT_EQ(from_file.geometry.sensors[1].y, 0.5);

  // A mistake in the file: named with the file's own line and column, at the stage's key.
  std::ofstream(file) << "kind: linear\nvelocity_m_s: fast\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 1, y_m: 0.5}\n";
  expect_one_error_in(with_locate("  - {name: where, kind: ae_locate, input: hits, geometry: " + file + "}\n"), 9, 59,
                      "stages[1].geometry: " + file + ":2:15: velocity_m_s: expected a number");
  std::remove(file.c_str());
  expect_one_error_in(with_locate("  - {name: where, kind: ae_locate, input: hits, geometry: /nonexistent.yaml}\n"), 9,
                      59, "stages[1].geometry: /nonexistent.yaml: cannot read the file");
}

TEST(ConfigLoader, AeLocateErrorsPointAtTheirPlace) {
  // Inline: at the key in the config itself.
  std::string pipe = kPipe;
  expect_one_error_in(with_locate(pipe.replace(pipe.find("velocity_m_s: 5100"), 18, "velocity_m_s: 0")), 14, 21,
                      "stages[1].geometry: velocity_m_s: 0 is out of range 1 ... 20000");
  pipe = kPipe;
  expect_one_error_in(with_locate(pipe.replace(pipe.find("kind: linear"), 12, "kind: cylindrical")), 13, 13,
                      "stages[1].geometry: kind: expected planar or linear, got 'cylindrical'");
  pipe = kPipe;
  expect_one_error_in(with_locate(pipe.replace(pipe.find("{x_m: 3, y_m: 0}"), 16, "{x_m: 0, y_m: 0}")), 15, 16,
                      "stages[1].geometry: sensors of channels 0 and 1 are at the same place");
  // It reads an ae_hits stage's hits: not samples, not another kind of stage.
  pipe = kPipe;
  expect_one_error_in(with_locate(pipe.replace(pipe.find("input: hits"), 11, "input: input")), 11, 12,
                      "stages[1].input: an ae_locate stage reads the hits of an earlier ae_hits stage; there is none "
                      "named 'input'");
  pipe = kPipe;
  expect_one_error_in(with_locate(pipe.replace(pipe.find("input: hits"), 11, "input: hit")), 11, 12,
                      "there is none named 'hit' (did you mean 'hits'?)");
  expect_one_error_in(with_locate("  - {name: where, kind: ae_locate, input: hits}\n"), 9, 5,
                      "stages[1]: an ae_locate stage needs `geometry`");
  expect_one_error_in(with_locate("  - {name: where, kind: ae_locate, input: hits, optional: true, geometry: {kind: linear,"
                                  " velocity_m_s: 3000, sensors: [{x_m: 0, y_m: 0}, {x_m: 1, y_m: 0}]}}\n"),
                      9, 49, "unknown key 'optional' in stages[1] (it applies to kind: ae_hits");
}

// YAML aliases make the config a graph: one inside the node it names is an error, not a stack
// overflow (fuzz_config, 2026-12-05), and aliases of aliases nine deep (512 paths to each leaf)
// are walked once each, not once a path.
TEST(ConfigLoader, AnAliasInsideItsOwnNodeIsAnErrorAndAliasesAreWalkedOnce) {
  const ConfigResult loop =
      parse_config("source: {kind: synthetic, rate_hz: 48000, channels: 1}\nx: &loop {a: 1, b: *loop}\n", "l.yaml");
  ASSERT_FALSE(loop.settings);
  // Named at the anchored node (and `x` as an unknown key).
  size_t cycles = 0;
  for (const ConfigError& e : loop.errors)
    if (e.message.find("this node holds an alias of itself") != std::string::npos) {
      ++cycles;
      EXPECT_EQ(e.line, 2);
      EXPECT_EQ(e.column, 4);
    }
  EXPECT_EQ(cycles, 1u);
  std::string nested = "source: {kind: synthetic, rate_hz: 48000, channels: 1}\nlevels:\n  l0: &l0 [a\xff" "b]\n";
  for (int k = 1; k < 10; ++k)
    nested += "  l" + std::to_string(k) + ": &l" + std::to_string(k) + " [*l" + std::to_string(k - 1) + ", *l" +
              std::to_string(k - 1) + "]\n";
  const auto t0 = std::chrono::steady_clock::now();
  const ConfigResult r = parse_config(nested, "n.yaml");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.settings);
  // The invalid byte named once (its node walked once, not once for each of its 512 paths).
  size_t utf8 = 0;
  for (const ConfigError& e : r.errors) utf8 += e.message.find("not valid UTF-8") != std::string::npos;
  EXPECT_EQ(utf8, 1u);
  EXPECT_LT(s, 1.0);
}

TEST(ConfigLoader, AClusterAlarmReadsItsLevelsAndWantsTheGeometrysCell) {
  ConfigResult r = parse_config(with_locate(std::string(kPipe) + "    cluster_alarm: {metric: energy_per_s, window_s: 30, "
                                                                 "alert: 1000, danger: 5000, latch: true}\n"),
                                "d.yaml");
  ASSERT_TRUE(r.settings) << format_error("d.yaml", r.errors[0]);
  const auto& loc = std::get<AeLocateSettings>(r.settings->stages[1].params);
  ASSERT_TRUE(loc.cluster_alarm);
  EXPECT_EQ(loc.cluster_alarm->metric, AeClusterMetric::kEnergyPerS);
  EXPECT_EQ(loc.cluster_alarm->window_s, 30);
  EXPECT_EQ(loc.cluster_alarm->levels.alert, 1000);
  EXPECT_EQ(loc.cluster_alarm->levels.danger, 5000);
  EXPECT_TRUE(loc.cluster_alarm->levels.latch);
  std::string no_cell = kPipe;
  no_cell.erase(no_cell.find("      cluster_cell_m: 0.1\n"), 26);
  expect_one_error_in(with_locate(no_cell + "    cluster_alarm: {alert: 2}\n"), 17, 20,
                      "stages[1].cluster_alarm: clusters need the geometry's cluster_cell_m");
  expect_one_error_in(with_locate(std::string(kPipe) + "    cluster_alarm: {metric: hits_per_s, alert: 2}\n"), 18, 29,
                      "metric must be one of events_per_s, energy_per_s, got 'hits_per_s'");
  expect_one_error_in(with_locate(std::string(kPipe) + "    cluster_alarm: {window_s: 10}\n"), 18, 20,
                      "stages[1].cluster_alarm: missing required key 'alert'");
}

// AE sources planted by the synthetic source: the example rig's crack, its geometry shared with
// the ae_locate stage through a YAML anchor.
TEST(ConfigLoader, TheExampleRigPlantsItsCrackOnTheGeometryItLocatesWith) {
  const ConfigResult r = load_config_file(std::string(VIGIL_SOURCE_DIR) + "/config/examples/ae-rig.yaml");
  ASSERT_TRUE(r.settings) << format_error("ae-rig.yaml", r.errors[0]);
  const SyntheticSpec& sp = r.settings->synthetic;
  ASSERT_TRUE(sp.ae_sources);
  const PlantedAeSpec& p = *sp.ae_sources;
  ASSERT_EQ(p.sensors.size(), 4u);
  EXPECT_EQ(p.sensors[2], (PlantedAeSensor{1, 1, 0}));
  EXPECT_EQ(p.velocity_m_s, 3000);
  EXPECT_EQ(p.attenuation_db_m, 10);
  EXPECT_EQ(p.spreading, AeSpreading::kCylindrical);
  EXPECT_EQ(p.freq_hz, 150000);
  ASSERT_EQ(p.sources.size(), 1u);
  EXPECT_EQ(p.sources[0].x_m, 0.63);
  EXPECT_EQ(p.sources[0].rate_hz, 2);
  const auto& loc = std::get<AeLocateSettings>(r.settings->stages.back().params);
  EXPECT_EQ(loc.geometry.sensors[2], (AePoint{1, 1, 0}));
  EXPECT_EQ(loc.cluster_cell_m, 0.05);
  ASSERT_TRUE(loc.cluster_alarm);
  EXPECT_EQ(loc.cluster_alarm->levels.alert, 0.5);
}

TEST(ConfigLoader, PlantedAeSourceErrorsPointAtTheirPlace) {
  const std::string base = "source:\n  kind: synthetic\n  rate_hz: 2000000\n  channels: 2\n  ae_sources:\n"
                           "    geometry: {kind: linear, velocity_m_s: 3000, sensors: [{x_m: 0, y_m: 0}, {x_m: 2, y_m: 0}]}\n"
                           "    spreading: cylindrical\n"
                           "    sources:\n      - {x_m: 0.5, y_m: 0, amplitude: 0.1, rate_hz: 3}\n";
  const ConfigResult ok = parse_config(base, "s.yaml");
  ASSERT_TRUE(ok.settings) << format_error("s.yaml", ok.errors[0]);
  EXPECT_EQ(ok.settings->synthetic.ae_sources->sources[0].rate_hz, 3);
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expect_one_error(edit("channels: 2", "channels: 3"), 6, 15,
                   "source.ae_sources.geometry: 2 sensors for 3 channels (one sensor a channel, in channel order)");
  expect_one_error(edit("spreading: cylindrical", "spreading: conical"), 7, 16,
                   "source.ae_sources.spreading must be one of none, cylindrical, spherical, got 'conical'");
  expect_one_error(edit(", rate_hz: 3", ""), 9, 9, "source.ae_sources.sources[0]: emits never: give rate_hz");
  expect_one_error(edit("amplitude: 0.1, ", ""), 9, 9, "source.ae_sources.sources[0]: missing required key 'amplitude'");
  expect_one_error(edit("    spreading: cylindrical\n", "    spreading: cylindrical\n    burst: {freq_hz: 2000000}\n"), 8,
                   22, "source.ae_sources.burst.freq_hz must be 0..1e+06, got 2000000");
}

}  // namespace
}  // namespace vigil
