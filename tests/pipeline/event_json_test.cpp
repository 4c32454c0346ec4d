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
