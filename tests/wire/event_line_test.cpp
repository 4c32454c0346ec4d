// vigil-listen's event lines: the fields laid out for each known type, and any datagram (wrong
// types, missing fields, other JSON) read without throwing.
#include "wire/event_line.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace vigil {
namespace {

using nlohmann::json;

json parse(const std::string& s) {
  json ev;
  EXPECT_TRUE(parse_event_datagram(reinterpret_cast<const uint8_t*>(s.data()), s.size(), ev)) << s;
  return ev;
}

TEST(EventLine, OnlyObjectsWithAnUnsignedSeqAreEvents) {
  json ev;
  for (const std::string bad : {"", "[1]", "{\"seq\":-1}", "{\"seq\":1.5}", "{\"seq\":\"1\"}", "{\"type\":\"x\"}",
                                "{\"seq\":1", "\xff\xfe"})
    EXPECT_FALSE(parse_event_datagram(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), ev)) << bad;
  EXPECT_EQ(parse("{\"seq\":0}")["seq"], 0);
}

TEST(EventLine, KnownTypesAreLaidOut) {
  EXPECT_EQ(event_line(parse(R"({"type":"alarm","seq":4,"stage":"alarm","state":"raised","level":"high",
      "rule":"band_rms","band":"low","channel":1,"value":0.35,"threshold":0.2,"sample_time":"T"})")),
            "event alarm seq 4: alarm raised (high) band_rms band 'low' channel 1: value 0.35, threshold 0.2 at T");
  EXPECT_EQ(event_line(parse(R"({"type":"status","seq":3,"chunks_in":10,"chunks_out":9,"dropped_frames":512,
      "deadline_misses":2,"latency_us":{"p50":12,"p99":40,"max":90},"send_errors":7})")),
            "event status seq 3: chunks in 10 out 9, dropped frames 512, deadline misses 2, latency p50/p99/max "
            "12/40/90 us, send errors 7");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_hit","seq":5,"stage":"ae","channel":3,"amplitude_db":71.5,
      "rise_time_us":12,"duration_us":300,"counts":14,"energy_eu":0.02,"sample_time":"T"})")),
            "event ae_hit seq 5: ae channel 3: 71.5 dB_AE, rise 12 us, duration 300 us, 14 counts, energy 0.02 eu at T");
  EXPECT_EQ(event_line(parse(R"({"type":"record","seq":7,"action":"stop","reason":"disk full"})")),
            "event record seq 7: stop disk full");
  EXPECT_EQ(event_line(parse(R"({"type":"start","seq":0,"version":"0.1.0","rate_hz":51200.0,"layout":{"outputs":[
      {"index":0,"stream":"input","channels":4,"bands":[""]},{"index":1,"stream":"bands","channels":4,
      "bands":["low","mid","high"]}],"band_rms":[]}})")),
            "event start seq 0: vigild 0.1.0, source at 51200 Hz, 2 data outputs of 16 streams");
  EXPECT_EQ(event_line(parse(R"({"type":"start","seq":0,"layout":{"outputs":[5,{"channels":"x"}]}})")),
            "event start seq 0: vigild , source at 0 Hz, 1 data output of 0 streams");
}

// Every other type vigild sends (docs/PROTOCOL.md) has a line of its own, not the raw JSON: the
// ones an operator must not miss among the hits (reload, overload, overrun, GPU fallback) above all.
TEST(EventLine, EveryTypeVigildSendsIsLaidOut) {
  EXPECT_EQ(event_line(parse(R"({"type":"ae_level","seq":11,"stage":"ae","band":"","channel":0,"frame":51199,
      "interval_s":1.0,"rms_v":0.0392725,"asl_db":90.356,"sample_time":"T"})")),
            "event ae_level seq 11: ae channel 0: rms 0.03927 V, ASL 90.4 dB_AE over 1 s to T");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_level","seq":12,"stage":"ae","band":"hf","channel":2,
      "interval_s":0.5,"rms_v":0.0,"asl_db":null,"sample_time":"T"})")),
            "event ae_level seq 12: ae band 'hf' channel 2: rms 0 V, ASL none (silent) over 0.5 s to T");
  EXPECT_EQ(event_line(parse(R"({"type":"reload","seq":8,"result":"updated","path":"v.yaml","from_frame":4096})")),
            "event reload seq 8: v.yaml: updated in place from frame 4096, no sample lost");
  EXPECT_EQ(event_line(parse(R"({"type":"reload","seq":9,"result":"rebuilt","path":"v.yaml",
      "reason":"source.channels changed"})")),
            "event reload seq 9: v.yaml: pipeline rebuilt (source.channels changed)");
  EXPECT_EQ(event_line(parse(R"({"type":"reload","seq":10,"result":"rejected","path":"v.yaml",
      "errors":["v.yaml:3:12: source.rate_hz must be 1..1e+07, got 0","v.yaml:9:5: x"]})")),
            "event reload seq 10: v.yaml: rejected, the running config stays: v.yaml:3:12: source.rate_hz must be "
            "1..1e+07, got 0 (and 1 more)");
  EXPECT_EQ(event_line(parse(R"({"type":"source","seq":13,"state":"overrun","frames_lost":480,"frame":96000,
      "sample_time":"T"})")),
            "event source seq 13: overrun, 480 frames lost, resumed at frame 96000 (T)");
  EXPECT_EQ(event_line(parse(R"({"type":"overload","seq":14,"state":"shedding","stages":["den","vib"],
      "misses_last_s":3.0,"frame":2048,"sample_time":"T"})")),
            "event overload seq 14: shedding optional stages [den, vib] after 3 deadline misses in a second, "
            "from frame 2048 (T)");
  EXPECT_EQ(event_line(parse(R"({"type":"overload","seq":15,"state":"restored","stages":["den"],"misses_last_s":0,
      "frame":9216,"sample_time":"T"})")),
            "event overload seq 15: restored optional stages [den], from frame 9216 (T)");
  EXPECT_EQ(event_line(parse(R"({"type":"backend","seq":16,"stage":"bands","state":"fallback","from":"cuda",
      "to":"cpu","error":"cudaErrorLaunchFailure: unspecified launch failure","frame":1024,"sample_time":"T"})")),
            "event backend seq 16: bands: fallback from cuda to cpu at frame 1024 (T): cudaErrorLaunchFailure: "
            "unspecified launch failure");
  // A band is named only where there is one: the raw input's events say no band.
  EXPECT_EQ(event_line(parse(R"({"type":"vibration","seq":17,"stage":"vib","band":"","channel":1,"rms":0.5,
      "crest_factor":2.5,"kurtosis":3.0})")),
            "event vibration seq 17: vib channel 1: rms 0.5, crest 2.5, kurtosis 3");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_hit","seq":18,"stage":"ae","band":"hf","channel":0,"amplitude_db":60,
      "rise_time_us":1,"duration_us":2,"counts":3,"energy_eu":4,"sample_time":"T"})")),
            "event ae_hit seq 18: ae band 'hf' channel 0: 60.0 dB_AE, rise 1 us, duration 2 us, 3 counts, energy 4 eu at T");
  EXPECT_EQ(event_line(parse(R"({"type":"health","seq":19,"state":"raised","rule":"temperature","zone":"GPU-therm",
      "temp_c":91.25,"limit_c":90})")),
            "event health seq 19: temperature raised: GPU-therm at 91.2 C (limit 90.0 C)");
  EXPECT_EQ(event_line(parse(R"({"type":"health","seq":20,"state":"cleared","rule":"throttling","clock":"devfreq/gpu",
      "kind":"gpu","cur_mhz":1300.5,"cap_mhz":1300.5,"max_mhz":1300.5})")),
            "event health seq 20: throttling cleared: devfreq/gpu (gpu) at 1300 MHz, cap 1300 of 1300 MHz");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_event","seq":22,"stage":"where","located":true,"x_m":0.30079,
      "y_m":0.59962,"z_m":0,"inside":true,"residual_m":0.000593,"hits":4,"first_channel":3,"channels":[3,0,2,1],
      "energy_eu":9.6486e9,"cluster":{"cell":[6,11],"events":2},"sample_time":"T"})")),
            "event ae_event seq 22: where: at x 0.3008 m, y 0.5996 m (inside), residual 0.000593 m, 4 hits, first "
            "channel 3 [3, 0, 2, 1], energy 9.649e+09 eu, cluster of 2 at T");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_event","seq":23,"stage":"where","located":true,"x_m":1.5057,"y_m":0.3985,
      "inside":false,"residual_m":0.0008,"hits":4,"first_channel":1,"channels":[1,2,0,3],"energy_eu":2,
      "sample_time":"T"})")),
            "event ae_event seq 23: where: at x 1.5057 m, y 0.3985 m (outside the array), residual 0.0008 m, 4 hits, "
            "first channel 1 [1, 2, 0, 3], energy 2 eu at T");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_event","seq":24,"stage":"where","located":false,
      "why_not":"at or beyond the end sensor","hits":2,"first_channel":0,"channels":[0,1],"energy_eu":1,
      "sample_time":"T"})")),
            "event ae_event seq 24: where: not located (at or beyond the end sensor), 2 hits, first channel 0 [0, 1], "
            "energy 1 eu at T");
  EXPECT_EQ(event_line(parse(R"({"type":"alarm","seq":25,"stage":"plate","state":"raised","rule":"cluster",
      "metric":"events_per_s","level":"alert","from":"normal","value":0.5,"threshold":0.5,"window_s":10,
      "cell":[12,7],"cell_m":0.05,"x_m":0.625,"y_m":0.375,"sample_time":"T"})")),
            "event alarm seq 25: plate raised (alert) cluster at x 0.6250 m, y 0.3750 m (cell 0.05 m): events_per_s "
            "0.5, threshold 0.5 at T");
  // A status with a health reading names the hottest zone and the clocks throttled.
  EXPECT_EQ(event_line(parse(R"({"type":"status","seq":21,"health":{"zones":[{"zone":"cpu","temp_c":48.5},
      {"zone":"GPU-therm","temp_c":61.0},{"zone":"x","temp_c":"hot"}],"clocks":[{"clock":"cpufreq/policy0",
      "throttled":true},{"clock":"devfreq/gpu","throttled":false},{"clock":"y","throttled":"yes"}]}})")),
            "event status seq 21: chunks in 0 out 0, dropped frames 0, deadline misses 0, latency p50/p99/max 0/0/0 us, "
            "send errors 0, hottest GPU-therm 61.0 C, throttled: cpufreq/policy0");
}

// The listener aborted on these before (json::value() throws on a type mismatch).
TEST(EventLine, WrongTypesPrintDefaultsInsteadOfThrowing) {
  EXPECT_EQ(event_line(parse(R"({"type":"alarm","seq":1,"level":5,"channel":"x","value":"y","latency_us":3})")),
            "event alarm seq 1:   ()  channel 0: value 0, threshold 0 at ");
  EXPECT_EQ(event_line(parse(R"({"type":"status","seq":2,"latency_us":[1],"chunks_in":-4})")),
            "event status seq 2: chunks in 0 out 0, dropped frames 0, deadline misses 0, latency p50/p99/max 0/0/0 us, "
            "send errors 0");
  EXPECT_EQ(event_line(parse(R"({"type":"vibration","seq":3,"iso_zone":1,"velocity_rms":"fast","channel":2})")),
            "event vibration seq 3:  channel 2: rms 0, crest 0, kurtosis 0, velocity 0 mm/s, zone ");
  EXPECT_EQ(event_line(parse(R"({"type":"reload","seq":4,"errors":"x","path":5})")),
            "event reload seq 4: : , the running config stays: ");
  EXPECT_EQ(event_line(parse(R"({"type":"overload","seq":5,"stages":[1,"a",null]})")),
            "event overload seq 5:  optional stages [a], from frame 0 ()");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_level","seq":6,"asl_db":"loud"})")),
            "event ae_level seq 6:  channel 0: rms 0 V, ASL none (silent) over 0 s to ");
  EXPECT_EQ(event_line(parse(R"({"type":"health","seq":7,"rule":3,"zone":[1]})")),
            "event health seq 7: throttling :  () at 0 MHz, cap 0 of 0 MHz");
  EXPECT_EQ(event_line(parse(R"({"type":"status","seq":8,"health":{"zones":"x","clocks":[3]}})")),
            "event status seq 8: chunks in 0 out 0, dropped frames 0, deadline misses 0, latency p50/p99/max 0/0/0 us, "
            "send errors 0");
  EXPECT_EQ(event_line(parse(R"({"type":7,"seq":9})")), R"(event {"seq":9,"type":7})");
  EXPECT_EQ(event_line(parse(R"({"type":"ae_event","seq":6,"located":"yes","inside":1,"channels":"0,1",
      "cluster":{"events":"many"}})")),
            "event ae_event seq 6: : not located (), 0 hits, first channel 0 [], energy 0 eu at ");
}

// The seq-only reader (vigil-listen's counting path) gives the tree's verdict and seq, whatever the
// datagram: crafted edge cases, then random mutations of real event texts.
void expect_same_verdict(const std::string& s) {
  const auto* d = reinterpret_cast<const uint8_t*>(s.data());
  json ev;
  uint64_t seq = 12345;
  const bool tree = parse_event_datagram(d, s.size(), ev);
  ASSERT_EQ(event_datagram_seq(d, s.size(), seq), tree) << s;
  if (tree) {
    ASSERT_EQ(seq, ev["seq"].get<uint64_t>()) << s;
  }
}

TEST(EventLine, SeqReaderAgreesWithTheTree) {
  for (const std::string s :
       {"", " ", "[1]", "7", "\"seq\"", "null", "{}", "{\"seq\":-1}", "{\"seq\":1.5}", "{\"seq\":1e3}",
        "{\"seq\":\"1\"}", "{\"seq\":null}", "{\"seq\":true}", "{\"seq\":[1]}", "{\"seq\":{\"seq\":1}}",
        "{\"type\":\"x\"}", "{\"seq\":1", "{\"seq\":1}}", "{\"seq\":1} x", "\xff\xfe", "{\"seq\":0}",
        "{\"seq\":18446744073709551615}", "{\"seq\":18446744073709551616}", "{\"a\":{\"seq\":3}}",
        "{\"a\":[{\"seq\":3}],\"seq\":4}", "{\"seq\":5,\"seq\":6}", "{\"seq\":5,\"seq\":-6}",
        "{\"seq\":5,\"seq\":{}}", "{\"seq\":[],\"seq\":7}", "{\"seq\":1,\"x\":[1,2,{\"y\":null}]}",
        " {\"seq\" : 8 } ", "{\"seq\":9} // c", "{\"s\\u0065q\":10}", "{\"seq\":01}"})
    expect_same_verdict(s);
  const std::vector<std::string> real = {
      R"({"amplitude_db":71.5,"threshold_db":45.0,"rise_time_us":12.0,"counts":41,"truncated":false,"stage":"hits","band":"ae","channel":3,"frame":1234567,"sample_time":"2026-11-25T09:00:00.123456789Z","seq":42,"time":"2026-11-25T09:00:00.125Z","type":"ae_hit"})",
      R"({"type":"status","seq":3,"latency_us":{"p50":415,"p99":831},"stages":{"den":{"gpu_us":{"p50":71}}},"final":true})"};
  std::mt19937 rng(9);
  const std::string alphabet = "{}[]\":,0123456789-+.eE tfnulsaq\\";
  for (int round = 0; round < 20000; ++round) {
    std::string s = real[size_t(round) % real.size()];
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.erase(at, 1 + rng() % 3); break;
        default: s.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    expect_same_verdict(s);
    if (HasFatalFailure()) return;
  }
}

// Lines: the same events, text spans and verdicts from either reader.
TEST(EventLine, BothReadersSplitLinesAlike) {
  const std::string d = "{\"seq\":1}\n\nnot json\n{\"seq\":2,\"x\":[1]}\n{\"seq\":-3}\n";
  std::vector<std::string> a, b;
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "=" + std::to_string(...) here.
  const auto entry = [](const uint8_t* t, size_t n, const uint64_t* seq) {
    std::string s(reinterpret_cast<const char*>(t), n);
    s += '=';
    s += seq ? std::to_string(*seq) : std::string("bad");
    return s;
  };
  for_each_event(reinterpret_cast<const uint8_t*>(d.data()), d.size(), [&](const uint8_t* t, size_t n, json* ev) {
    const uint64_t seq = ev ? (*ev)["seq"].get<uint64_t>() : 0;
    a.push_back(entry(t, n, ev ? &seq : nullptr));
  });
  for_each_event_seq(reinterpret_cast<const uint8_t*>(d.data()), d.size(),
                     [&](const uint8_t* t, size_t n, const uint64_t* seq) { b.push_back(entry(t, n, seq)); });
  EXPECT_EQ(a, (std::vector<std::string>{"{\"seq\":1}=1", "not json=bad", "{\"seq\":2,\"x\":[1]}=2", "{\"seq\":-3}=bad"}));
  EXPECT_EQ(b, a);
}

}  // namespace
}  // namespace vigil
