// vigil-listen's event lines: the fields laid out for each known type, and any datagram (wrong
// types, missing fields, other JSON) read without throwing.
#include "pipeline/event_line.hpp"

#include <gtest/gtest.h>

#include <string>

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
            "event start seq 0: vigild , source at 0 Hz, 1 data outputs of 0 streams");
  EXPECT_EQ(event_line(parse(R"({"type":"reload","seq":8,"result":"updated"})")),
            R"(event {"result":"updated","seq":8,"type":"reload"})");
}

// The listener aborted on these before (json::value() throws on a type mismatch).
TEST(EventLine, WrongTypesPrintDefaultsInsteadOfThrowing) {
  EXPECT_EQ(event_line(parse(R"({"type":"alarm","seq":1,"level":5,"channel":"x","value":"y","latency_us":3})")),
            "event alarm seq 1:   ()  band '' channel 0: value 0, threshold 0 at ");
  EXPECT_EQ(event_line(parse(R"({"type":"status","seq":2,"latency_us":[1],"chunks_in":-4})")),
            "event status seq 2: chunks in 0 out 0, dropped frames 0, deadline misses 0, latency p50/p99/max 0/0/0 us, "
            "send errors 0");
  EXPECT_EQ(event_line(parse(R"({"type":"vibration","seq":3,"iso_zone":1,"velocity_rms":"fast","channel":2})")),
            "event vibration seq 3:  band '' channel 2: rms 0, crest 0, kurtosis 0, velocity 0 mm/s, zone ");
  EXPECT_EQ(event_line(parse(R"({"type":7,"seq":9})")), R"(event {"seq":9,"type":7})");
}

}  // namespace
}  // namespace vigil
