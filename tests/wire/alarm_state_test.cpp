// Which alarm an event speaks of and whether it stays raised (wire/alarm_state): a cluster's cell
// is part of it, a fall from danger to alert leaves it raised, a clear to normal ends it.
#include "wire/alarm_state.hpp"

#include <gtest/gtest.h>

namespace vigil {
namespace {

using nlohmann::json;

TEST(AlarmState, EachCellOfAClusterAlarmIsAnAlarmOfItsOwn) {
  const json a = {{"type", "alarm"}, {"state", "raised"}, {"stage", "plate"}, {"rule", "cluster"}, {"cell", {12, 7}},
                  {"level", "alert"}};
  json b = a;
  b["cell"] = {2, 4};
  EXPECT_EQ(alarm_key(a), "plate/cluster///[12,7]");
  EXPECT_NE(alarm_key(a), alarm_key(b));
  EXPECT_TRUE(alarm_left_raised(a));
}

TEST(AlarmState, AFallToALowerLevelStaysRaisedAClearToNormalEndsIt) {
  const json band = {{"type", "alarm"}, {"state", "cleared"}, {"stage", "band_alarm"}, {"rule", "band_rms"},
                     {"band", "mid"}, {"channel", 2}};
  EXPECT_EQ(alarm_key(band), "band_alarm/band_rms/mid/2");
  EXPECT_FALSE(alarm_left_raised(band));  // band_rms has one level: a clear ends it
  const json to_alert = {{"type", "alarm"}, {"state", "cleared"}, {"stage", "vib"}, {"rule", "velocity"},
                         {"band", ""}, {"channel", 0}, {"level", "alert"}, {"from", "danger"}};
  EXPECT_TRUE(alarm_left_raised(to_alert));
  json to_normal = to_alert;
  to_normal["level"] = "normal";
  EXPECT_FALSE(alarm_left_raised(to_normal));
  EXPECT_EQ(alarm_key(to_alert), alarm_key(to_normal));
}

TEST(AlarmState, WhatIsNoAlarmHasNoKey) {
  EXPECT_EQ(alarm_key(json{{"type", "ae_event"}, {"state", "raised"}}), "");
  EXPECT_EQ(alarm_key(json{{"type", "alarm"}, {"state", 3}}), "");
  EXPECT_EQ(alarm_key(json{{"type", "alarm"}}), "");
  EXPECT_EQ(alarm_key(json::array({1, 2})), "");
  // Fields of the wrong type still make a key (from the fleet: whatever a rig sent).
  EXPECT_EQ(alarm_key(json{{"type", "alarm"}, {"state", "raised"}, {"stage", 5}, {"channel", "x"}}), "5///x");
}

}  // namespace
}  // namespace vigil
