// The AE cluster alarm (dsp/ae_cluster_alarm): a cell's event or energy rate over a sliding
// window against alert and danger levels with hysteresis, delays and latching; the rate checked
// against a count by brute force over fresh random events in several cells.
#include "dsp/ae_cluster_alarm.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace vigil {
namespace {

constexpr double kRate = 1000;  // frames a second: frame = ms
const AeClusterGrid::Key kCrack{12, 7};

AeClusterAlarmSettings events_per_s(double alert, double window_s = 10) {
  AeClusterAlarmSettings s;
  s.window_s = window_s;
  s.levels.alert = alert;
  return s;
}

TEST(AeClusterAlarm, RaisedWhenACellsEventRateReachesAlertAndClearedWhenItsEventsAgeOut) {
  AeClusterAlarms a(events_per_s(0.5), kRate);  // 5 events in 10 s; hysteresis 5 %: clears below 0.475
  std::vector<AeClusterAlarms::Change> changes;
  for (uint64_t k = 0; k < 4; ++k) {  // one a second: 4 events, 0.4 a second
    a.add(kCrack, 1000 * k, 1.0);
    a.evaluate(1000 * k + 500, changes);
  }
  EXPECT_TRUE(changes.empty());
  EXPECT_DOUBLE_EQ(a.rate(kCrack), 0.4);
  a.add(kCrack, 4000, 1.0);
  a.evaluate(4500, changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].cell, kCrack);
  EXPECT_EQ(changes[0].transition.from, AlarmLevel::kNormal);
  EXPECT_EQ(changes[0].transition.to, AlarmLevel::kAlert);
  EXPECT_DOUBLE_EQ(changes[0].transition.value, 0.5);
  EXPECT_DOUBLE_EQ(changes[0].transition.threshold, 0.5);
  EXPECT_EQ(changes[0].transition.cross_frame, 4500u);
  EXPECT_EQ(a.cells_raised(), 1u);
  changes.clear();
  // No more events: the first leaves the window at 10 000 (an event counts for 10 s), 0.4 < 0.475.
  a.evaluate(9999, changes);
  EXPECT_TRUE(changes.empty());
  a.evaluate(10000, changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].transition.to, AlarmLevel::kNormal);
  EXPECT_DOUBLE_EQ(changes[0].transition.value, 0.4);
  EXPECT_DOUBLE_EQ(changes[0].transition.threshold, 0.475);
  EXPECT_EQ(a.cells_raised(), 0u);
}

TEST(AeClusterAlarm, AnotherCellsEventsDoNotCountAndScatteredEventsRaiseNone) {
  AeClusterAlarms a(events_per_s(0.5), kRate);
  std::vector<AeClusterAlarms::Change> changes;
  // 100 events in 10 s (10 a second in all), each in its own cell.
  for (int64_t k = 0; k < 100; ++k) a.add({k % 10, k / 10}, uint64_t(100 * k), 1.0);
  a.evaluate(9999, changes);
  EXPECT_TRUE(changes.empty());
  EXPECT_DOUBLE_EQ(a.rate({3, 4}), 0.1);
  EXPECT_DOUBLE_EQ(a.rate(kCrack), 0.0);
}

TEST(AeClusterAlarm, EnergyRateReachesDangerAndALatchedLevelHoldsUntilAcknowledged) {
  AeClusterAlarmSettings s;
  s.metric = AeClusterMetric::kEnergyPerS;
  s.window_s = 2;
  s.levels.alert = 100;   // eu a second
  s.levels.danger = 1000;
  s.levels.latch = true;
  AeClusterAlarms a(s, kRate);
  std::vector<AeClusterAlarms::Change> changes;
  a.add(kCrack, 0, 300);
  a.evaluate(100, changes);  // 150 eu/s
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].transition.to, AlarmLevel::kAlert);
  EXPECT_DOUBLE_EQ(changes[0].transition.value, 150);
  a.add(kCrack, 200, 1900);
  a.evaluate(300, changes);  // 1100 eu/s
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1].transition.from, AlarmLevel::kAlert);
  EXPECT_EQ(changes[1].transition.to, AlarmLevel::kDanger);
  EXPECT_DOUBLE_EQ(changes[1].transition.value, 1100);
  changes.clear();
  a.evaluate(60000, changes);  // long quiet: latched
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(a.level(kCrack), AlarmLevel::kDanger);
  EXPECT_DOUBLE_EQ(a.rate(kCrack), 0.0);
  a.acknowledge();
  a.evaluate(60001, changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].transition.to, AlarmLevel::kNormal);
  EXPECT_EQ(a.level(kCrack), AlarmLevel::kNormal);
}

TEST(AeClusterAlarm, AnOnDelayWantsTheRateHeldThatLong) {
  AeClusterAlarmSettings s = events_per_s(1.0, 1);
  s.levels.on_delay_s = 0.5;
  AeClusterAlarms a(s, kRate);
  std::vector<AeClusterAlarms::Change> changes;
  a.add(kCrack, 0, 1);
  a.evaluate(0, changes);
  a.evaluate(400, changes);
  EXPECT_TRUE(changes.empty());
  a.evaluate(500, changes);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].transition.cross_frame, 0u);
  // A second burst of one event that ages out before the delay: not raised.
  changes.clear();
  AeClusterAlarms b(s, kRate);
  b.add(kCrack, 0, 1);
  b.evaluate(0, changes);
  b.evaluate(1000, changes);  // aged out at 1000
  b.evaluate(1600, changes);
  EXPECT_TRUE(changes.empty());
}

TEST(AeClusterAlarm, EachCellsRateIsItsEventsInTheLastWindowCountedByBruteForce) {
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  AeClusterAlarmSettings s = events_per_s(1e9, 3);  // never raised: the rate alone
  s.metric = AeClusterMetric::kEnergyPerS;
  AeClusterAlarms a(s, kRate);
  struct Ev {
    AeClusterGrid::Key cell;
    uint64_t frame;
    double energy;
  };
  std::vector<Ev> all;
  std::uniform_int_distribution<int64_t> cell(0, 3);
  std::uniform_real_distribution<double> energy(1, 1000);
  std::vector<AeClusterAlarms::Change> changes;
  uint64_t now = 0;
  for (int step = 0; step < 400; ++step) {
    now += std::uniform_int_distribution<uint64_t>(1, 300)(rng);
    for (int k = std::uniform_int_distribution<int>(0, 3)(rng); k > 0; --k) {
      // Events may come up to 50 ms before the evaluation frame, out of order among themselves.
      const Ev e{{cell(rng), cell(rng)}, now - std::uniform_int_distribution<uint64_t>(0, 50)(rng), energy(rng)};
      all.push_back(e);
      a.add(e.cell, e.frame, e.energy);
    }
    a.evaluate(now, changes);
    for (int64_t x = 0; x <= 3; ++x)
      for (int64_t y = 0; y <= 3; ++y) {
        double sum = 0;
        for (const Ev& e : all)
          if (e.cell == AeClusterGrid::Key{x, y} && e.frame <= now && e.frame + 3000 > now) sum += e.energy;
        ASSERT_NEAR(a.rate({x, y}), sum / 3, 1e-9 * (1 + sum)) << "cell " << x << "," << y << " at " << now;
      }
  }
  EXPECT_TRUE(changes.empty());
}

TEST(AeClusterAlarm, BadSettingsAreRefused) {
  EXPECT_THROW(AeClusterAlarms(events_per_s(0.5, 0), kRate), std::invalid_argument);
  EXPECT_THROW(AeClusterAlarms(events_per_s(0), kRate), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
