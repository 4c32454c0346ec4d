#include "wire/event_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>

namespace vigil {
namespace {

// The writer keeps the last second's date and time: every value, in and out of order, across
// second, day and year boundaries and before 1970, as gmtime and printf would write it.
TEST(EventJson, Rfc3339MatchesGmtimeForRandomTimes) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int64_t> any(-2'000'000'000'000'000'000, 4'000'000'000'000'000'000);
  std::uniform_int_distribution<int64_t> near(-3'000'000'000, 3'000'000'000);
  int64_t t = 1'795'290'081'999'999'990;
  for (int i = 0; i < 20000; ++i) {
    t = i % 3 == 0 ? any(rng) : t + near(rng);  // jumps, and steps within and across seconds
    int64_t sec = t / 1'000'000'000, ns = t % 1'000'000'000;
    if (ns < 0) {
      ns += 1'000'000'000;
      --sec;
    }
    const time_t tt = time_t(sec);
    tm parts{};
    gmtime_r(&tt, &parts);
    char want[64];
    std::snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", parts.tm_year + 1900, parts.tm_mon + 1,
                  parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, static_cast<long long>(ns));
    ASSERT_EQ(rfc3339_utc(t), want) << t;
  }
}

TEST(EventJson, Rfc3339RoundTrip) {
  EXPECT_EQ(rfc3339_utc(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(rfc3339_utc(1'795'290'081'123'456'789), "2026-11-21T19:41:21.123456789Z");
  int64_t ns = 0;
  ASSERT_TRUE(parse_rfc3339_utc("2026-11-21T19:41:21.123456789Z", ns));
  EXPECT_EQ(ns, 1'795'290'081'123'456'789);
  ASSERT_TRUE(parse_rfc3339_utc("2026-11-21T19:41:21.5Z", ns));
  EXPECT_EQ(ns, 1'795'290'081'500'000'000);
  ASSERT_TRUE(parse_rfc3339_utc("2026-11-21T19:41:21Z", ns));
  EXPECT_FALSE(parse_rfc3339_utc("2026-11-21 18:21:21Z", ns));
  EXPECT_FALSE(parse_rfc3339_utc("2026-11-21T19:41:21.Z", ns));
  EXPECT_FALSE(parse_rfc3339_utc("2026-11-21T19:41:21+01:00", ns));
  // Out of range or not digits (found by fuzzing: -999 as a year overflowed the nanoseconds).
  for (const char* bad : {"-999-01-01T00:00:00Z", "+026-11-21T19:41:21Z", " 2026-11-21T19:41:21Z", "2026-13-01T00:00:00Z",
                          "2026-00-10T00:00:00Z", "2026-11-32T00:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T19:60:00Z",
                          "1500-01-01T00:00:00Z", "2300-01-01T00:00:00Z", "2026-1-21T19:41:21Z"})
    EXPECT_FALSE(parse_rfc3339_utc(bad, ns)) << bad;
  ASSERT_TRUE(parse_rfc3339_utc("1678-01-01T00:00:00Z", ns));  // the int64 nanosecond range's ends
  EXPECT_LT(ns, 0);
  ASSERT_TRUE(parse_rfc3339_utc("2261-12-31T23:59:59.999999999Z", ns));
  EXPECT_GT(ns, 0);
  EXPECT_EQ(rfc3339_utc(-1), "1969-12-31T23:59:59.999999999Z");
}

TEST(EventJson, EncoderAddsTypeSeqAndTime) {
  EventEncoder enc;
  for (uint64_t k = 0; k < 3; ++k) {
    const auto j = nlohmann::json::parse(enc.encode("alarm", {{"channel", 2}}, 1'000'000'000));
    EXPECT_EQ(j["type"], "alarm");
    EXPECT_EQ(j["seq"], k);
    EXPECT_EQ(j["time"], "1970-01-01T00:00:01.000000000Z");
    EXPECT_EQ(j["channel"], 2);
  }
  EXPECT_EQ(enc.next_seq(), 3u);
}


// An event is stamped with two times (the sample's, the sending's) that can sit in different
// seconds every time (a file replayed): alternating between them, each keeps its own date.
TEST(EventJson, Rfc3339KeepsTwoSecondsApart) {
  const int64_t sample = 1'600'000'000'123'456'789, now = 1'795'290'081'987'654'321;
  for (int i = 0; i < 6; ++i) {
    const int64_t a = sample + i, b = now + 1000 * i, c = now + 2'000'000'000;  // c: a third second now and then
    char buf[kRfc3339Max];
    EXPECT_EQ(std::string(buf, rfc3339_utc_to(a, buf)), "2020-09-13T12:26:40." + std::to_string(123'456'789 + i) + "Z");
    EXPECT_EQ(std::string(buf, rfc3339_utc_to(b, buf)), "2026-11-21T19:41:21.98765" + std::to_string(4321 + 1000 * i) + "Z");
    if (i % 2) {
      EXPECT_EQ(rfc3339_utc(c), "2026-11-21T19:41:23.987654321Z");
    }
  }
}

// A time field as text and as a JSON body's member: the same string.
TEST(EventJson, TimeFieldIsTheRfc3339Text) {
  EventText t;
  t.begin();
  t.time_field("sample_time", 1'795'290'081'000'000'007);
  t.end();
  nlohmann::json body;
  JsonFields{body}.time_field("sample_time", 1'795'290'081'000'000'007);
  EXPECT_EQ(nlohmann::json::parse(t.str()), body);
  EXPECT_EQ(body["sample_time"], "2026-11-21T19:41:21.000000007Z");
}

// EventText writes what nlohmann::json would read back to the same values: doubles in their
// shortest round-trip form (".0" where that looks like an integer), non-finite ones as null,
// strings escaped.
TEST(EventJson, EventTextReadsBackAsItsValues) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> exp10(-30, 30);
  EventText t;
  for (int round = 0; round < 200; ++round) {
    const double d = mant(rng) * std::pow(10.0, exp10(rng));
    const uint64_t u = rng();
    const int64_t i = int64_t(rng());
    t.begin();
    t.field("d", d);
    t.field("whole", 45.0);
    t.field("u", u);
    t.field("i", i);
    t.field("small", uint16_t(7));
    t.field("yes", true);
    t.field("nan", std::nan(""));
    t.field("inf", -HUGE_VAL);
    t.field("s", "a \"quoted\" \\ line\n\tand \x01");
    t.field("plain", "nothing to escape");
    t.field("first", "\"at once");
    t.end();
    const nlohmann::json j = nlohmann::json::parse(t.str());
    EXPECT_EQ(j["d"].get<double>(), d) << t.str();
    EXPECT_TRUE(j["whole"].is_number_float()) << t.str();
    EXPECT_EQ(j["whole"].get<double>(), 45.0);
    EXPECT_EQ(j["u"].get<uint64_t>(), u);
    EXPECT_EQ(j["i"].get<int64_t>(), i);
    EXPECT_EQ(j["small"], 7);
    EXPECT_EQ(j["yes"], true);
    EXPECT_TRUE(j["nan"].is_null());
    EXPECT_TRUE(j["inf"].is_null());
    EXPECT_EQ(j["s"], "a \"quoted\" \\ line\n\tand \x01");
    EXPECT_EQ(j["plain"], "nothing to escape");
    EXPECT_EQ(j["first"], "\"at once");
    EXPECT_EQ(j.size(), 11u);
  }
}

// finish_with() adds type, seq and time as encode() does, from the same count (reserve()).
TEST(EventJson, EncoderFinishesTextLikeABody) {
  EventEncoder enc;
  EventText t;
  (void)enc.encode("alarm", {{"channel", 2}}, 0);
  t.begin();
  t.field("channel", 3);
  const nlohmann::json j = nlohmann::json::parse(EventEncoder::finish_with("ae_hit", t, 1'000'000'000, enc.reserve(1)));
  EXPECT_EQ(j, nlohmann::json({{"channel", 3}, {"type", "ae_hit"}, {"seq", 1}, {"time", "1970-01-01T00:00:01.000000000Z"}}));
  EXPECT_EQ(enc.next_seq(), 2u);
}

}  // namespace
}  // namespace vigil
