// Alarm rules: scripted measurement sequences give exactly the expected transitions (levels,
// frames where the condition first held, thresholds), for hysteresis, on/off delays and latching.
#include "dsp/alarm_rule.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace vigil {
namespace {

struct Step {
  double value;
  uint64_t frame;
};
struct Expect {
  uint64_t at_frame;  // the measurement that completes the transition
  AlarmLevel to;
  uint64_t cross_frame;
  double threshold;
};

void check(AlarmRuleState& r, const std::vector<Step>& steps, const std::vector<Expect>& want) {
  std::vector<Expect> got;
  for (const Step& s : steps)
    if (auto t = r.evaluate(s.value, s.frame)) got.push_back({s.frame, t->to, t->cross_frame, t->threshold});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].at_frame, want[i].at_frame);
    EXPECT_EQ(got[i].to, want[i].to);
    EXPECT_EQ(got[i].cross_frame, want[i].cross_frame);
    EXPECT_DOUBLE_EQ(got[i].threshold, want[i].threshold);
  }
}

constexpr double kRate = 1000;  // frames per second; measurements every 100 frames below

TEST(AlarmRule, HysteresisHoldsALevelUntilTheValueFallsBelowThresholdMinusHysteresis) {
  AlarmRuleState r({2.8, 4.5, 0.2, 0, 0, false}, kRate);
  check(r,
        {{1.0, 0}, {2.79, 100}, {2.8, 200}, {2.7, 300}, {2.61, 400}, {2.59, 500}, {4.6, 600}, {4.31, 700},
         {4.29, 800}, {1.0, 900}},
        {{200, AlarmLevel::kAlert, 200, 2.8},
         {500, AlarmLevel::kNormal, 500, 2.6},
         {600, AlarmLevel::kDanger, 600, 4.5},
         {800, AlarmLevel::kAlert, 800, 4.3},
         {900, AlarmLevel::kNormal, 900, 2.6}});
}

TEST(AlarmRule, OnAndOffDelaysNeedTheConditionThroughout) {
  // on-delay 0.25 s = 250 frames, off-delay 0.35 s.
  AlarmRuleState r({1.0, 0, 0.1, 0.25, 0.35, false}, kRate);
  check(r,
        {{1.5, 0}, {1.5, 100}, {0.5, 200},                    // a 200-frame excursion: too short
         {1.5, 300}, {1.5, 400}, {1.5, 500}, {1.5, 600},      // held from 300: raised at 550 -> 600
         {0.5, 700}, {0.5, 800}, {1.2, 900},                  // dip too short to clear
         {0.5, 1000}, {0.5, 1100}, {0.5, 1200}, {0.5, 1300}, {0.5, 1400}},
        {{600, AlarmLevel::kAlert, 300, 1.0}, {1400, AlarmLevel::kNormal, 1000, 0.9}});
}

TEST(AlarmRule, LatchingHoldsUntilAcknowledged) {
  AlarmRuleState r({1.0, 2.0, 0.1, 0, 0, true}, kRate);
  check(r, {{2.5, 0}, {0.1, 100}, {0.1, 200}}, {{0, AlarmLevel::kDanger, 0, 2.0}});
  EXPECT_EQ(r.level(), AlarmLevel::kDanger);
  r.acknowledge();
  check(r, {{1.5, 300}, {0.1, 400}, {1.5, 500}, {0.1, 600}},
        {{300, AlarmLevel::kAlert, 300, 1.9},
         {400, AlarmLevel::kNormal, 400, 0.9},
         {500, AlarmLevel::kAlert, 500, 1.0}});  // raised again: latched again, no clear at 600
  EXPECT_EQ(r.level(), AlarmLevel::kAlert);
}

TEST(AlarmRule, RejectsInconsistentLevels) {
  EXPECT_THROW(AlarmRuleState({0.0, 0, -1, 0, 0, false}, kRate), std::invalid_argument);
  EXPECT_THROW(AlarmRuleState({2.0, 1.0, -1, 0, 0, false}, kRate), std::invalid_argument);
  EXPECT_THROW(AlarmRuleState({2.0, 0, -1, -1, 0, false}, kRate), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
