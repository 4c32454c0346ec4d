#include "pipeline/event_json.hpp"

#include <gtest/gtest.h>

namespace vigil {
namespace {

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

}  // namespace
}  // namespace vigil
