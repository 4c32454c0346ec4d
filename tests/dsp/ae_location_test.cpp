// AE source location (dsp/ae_location): Geiger's planar least squares and the linear pair formula
// against arrival times computed from known sources (fresh random positions each run; the seed is
// printed), a Monte-Carlo case whose bias and spread must match what the timing noise predicts,
// the event definition and lockout rules, and the cluster grid.
#include "dsp/ae_location.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace vigil {
namespace {

constexpr double kSteel = 3000;  // m/s, a plate wave in steel as the rig has it

AeGeometry square_plate() {
  AeGeometry g;
  g.kind = AeLocationKind::kPlanar;
  g.sensors = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}};
  g.velocity_m_s = kSteel;
  return g;
}

// The event a source at p emitting at t0 makes: every sensor's exact arrival, in arrival order.
AeEventHits arrivals(const AeGeometry& g, const AePoint& p, double t0, size_t sensors = SIZE_MAX) {
  AeEventHits e;
  for (uint32_t c = 0; c < g.sensors.size() && c < sensors; ++c) {
    const AePoint& s = g.sensors[c];
    e.hits.push_back({c, t0 + std::sqrt((p.x - s.x) * (p.x - s.x) + (p.y - s.y) * (p.y - s.y) +
                                        (p.z - s.z) * (p.z - s.z)) / g.velocity_m_s,
                      60.0 + c, 1.0});
  }
  std::sort(e.hits.begin(), e.hits.end(), [](const AeArrival& a, const AeArrival& b) { return a.time_s < b.time_s; });
  return e;
}

uint64_t seed() {
  const uint64_t s = std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)s);
  return s;
}

TEST(AeLocation, PlanarRecoversSourcesInsideAndOutsideTheArrayFromExactArrivals) {
  const AeGeometry g = square_plate();
  std::mt19937_64 rng(seed());
  std::uniform_real_distribution<double> in(0.02, 0.98), out(-1.0, 2.0), t0(10.0, 1000.0);
  int three_right = 0;
  for (int i = 0; i < 200; ++i) {
    const AePoint p{in(rng), in(rng), 0};
    const double t = t0(rng);
    const AeLocation loc = locate_ae_event(g, arrivals(g, p, t));
    ASSERT_TRUE(loc.located) << loc.why_not << " at " << p.x << ", " << p.y;
    EXPECT_NEAR(loc.position.x, p.x, 1e-7) << p.y;
    EXPECT_NEAR(loc.position.y, p.y, 1e-7) << p.x;
    EXPECT_NEAR(loc.origin_time_s, t, 1e-10);
    EXPECT_LT(loc.residual_m, 1e-7);
    EXPECT_NEAR(loc.residual_s * kSteel, loc.residual_m, 1e-15);
    EXPECT_EQ(loc.hits_used, 4u);
    EXPECT_TRUE(loc.inside);
    // Three hits: a position that explains them exactly, which is the source's unless a second
    // exact one inside the array is nearer the first-hit sensor (counted below).
    const AeLocation three = locate_ae_event(g, arrivals(g, p, t, 3));
    ASSERT_TRUE(three.located) << three.why_not;
    EXPECT_LT(three.residual_m, 1e-7);
    three_right += std::hypot(three.position.x - p.x, three.position.y - p.y) < 1e-6;
  }
  EXPECT_GE(three_right, 190) << "of 200 sources located from three hits";
  int outside = 0;
  for (int i = 0; i < 200; ++i) {
    AePoint p{out(rng), out(rng), 0};
    if (p.x > -0.05 && p.x < 1.05 && p.y > -0.05 && p.y < 1.05) continue;  // only clearly outside
    ++outside;
    const AeLocation loc = locate_ae_event(g, arrivals(g, p, 5.0));
    // Outside the array the hyperbolas meet at shallow angles; a position is either right and
    // flagged outside, or none is given.
    if (loc.located) {
      EXPECT_FALSE(loc.inside) << p.x << ", " << p.y << " located at " << loc.position.x << ", " << loc.position.y;
      EXPECT_NEAR(loc.position.x, p.x, 1e-3 * (1 + std::fabs(p.x)));
      EXPECT_NEAR(loc.position.y, p.y, 1e-3 * (1 + std::fabs(p.y)));
    }
  }
  EXPECT_GT(outside, 50);
}

TEST(AeLocation, PlanarSpreadAndBiasAreWhatTheTimingNoisePredicts) {
  // Each arrival off by N(0, sigma): the estimate's covariance is sigma_m^2 (J^T J)^-1 at the
  // source (J: the residuals' derivatives in metres), its bias small against its spread.
  const AeGeometry g = square_plate();
  const AePoint p{0.3, 0.6, 0};
  const double sigma_s = 1e-6, sigma_m = sigma_s * kSteel;
  double a[3][3] = {};
  for (const AePoint& s : g.sensors) {
    const double d = std::hypot(p.x - s.x, p.y - s.y);
    const double j[3] = {-(p.x - s.x) / d, -(p.y - s.y) / d, -1.0};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) a[r][c] += j[r] * j[c];
  }
  // (J^T J)^-1's x and y diagonal, by cofactors.
  const double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                     a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  const double var_x = sigma_m * sigma_m * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) / det;
  const double var_y = sigma_m * sigma_m * (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det;

  std::mt19937_64 rng(seed());
  std::normal_distribution<double> noise(0, sigma_s);
  const int n = 4000;
  double sx = 0, sy = 0, sxx = 0, syy = 0, res = 0;
  for (int i = 0; i < n; ++i) {
    AeEventHits e = arrivals(g, p, 1.0);
    for (AeArrival& h : e.hits) h.time_s += noise(rng);
    std::sort(e.hits.begin(), e.hits.end(), [](const AeArrival& x, const AeArrival& y) { return x.time_s < y.time_s; });
    const AeLocation loc = locate_ae_event(g, e);
    ASSERT_TRUE(loc.located) << loc.why_not;
    const double dx = loc.position.x - p.x, dy = loc.position.y - p.y;
    sx += dx;
    sy += dy;
    sxx += dx * dx;
    syy += dy * dy;
    res += loc.residual_s;
  }
  const double mx = sx / n, my = sy / n;
  const double sdx = std::sqrt(sxx / n - mx * mx), sdy = std::sqrt(syy / n - my * my);
  std::printf("predicted sd %.3g, %.3g m; measured %.3g, %.3g m; bias %.3g, %.3g m\n", std::sqrt(var_x),
              std::sqrt(var_y), sdx, sdy, mx, my);
  // The spread within 10 % of the prediction (its own sampling error is ~1.1 % at n = 4000); the
  // bias within 5 standard errors of 0.
  EXPECT_NEAR(sdx / std::sqrt(var_x), 1.0, 0.10);
  EXPECT_NEAR(sdy / std::sqrt(var_y), 1.0, 0.10);
  EXPECT_LT(std::fabs(mx), 5 * std::sqrt(var_x / n));
  EXPECT_LT(std::fabs(my), 5 * std::sqrt(var_y / n));
  // 4 arrivals, 3 unknowns: the RMS residual of one degree of freedom is of the noise's order.
  EXPECT_GT(res / n, 0.1 * sigma_s);
  EXPECT_LT(res / n, sigma_s);
}

TEST(AeLocation, LinearPlacesASourceBetweenTheFirstHitSensorAndItsNextNeighbour) {
  AeGeometry pipe;
  pipe.kind = AeLocationKind::kLinear;
  pipe.sensors = {{0, 0, 0}, {2, 0, 0}};
  pipe.velocity_m_s = 5000;
  std::mt19937_64 rng(seed());
  std::uniform_real_distribution<double> along(0.0, 2.0);
  for (int i = 0; i < 100; ++i) {
    const double x = along(rng);
    const AeLocation loc = locate_ae_event(pipe, arrivals(pipe, {x, 0, 0}, 3.0));
    ASSERT_TRUE(loc.located) << loc.why_not << " at " << x;
    EXPECT_NEAR(loc.position.x, x, 1e-9);
    EXPECT_NEAR(loc.origin_time_s, 3.0, 1e-12);
    EXPECT_TRUE(loc.inside);
  }
  // Beyond an end sensor the time difference is the whole spacing wherever the source is.
  const AeLocation beyond = locate_ae_event(pipe, arrivals(pipe, {-0.7, 0, 0}, 1.0));
  EXPECT_FALSE(beyond.located);
  EXPECT_EQ(beyond.why_not, "at or beyond the end sensor of channel 0");

  // Three sensors, not evenly spaced and not along x; the first hit in the middle.
  AeGeometry beam;
  beam.kind = AeLocationKind::kLinear;
  const double ux = 0.6, uy = 0.8;
  beam.sensors = {{0, 0, 0}, {1 * ux, 1 * uy, 0}, {3 * ux, 3 * uy, 0}};
  beam.velocity_m_s = 4000;
  for (const double s : {1.7, 0.4, 2.9}) {
    const AeLocation loc = locate_ae_event(beam, arrivals(beam, {s * ux, s * uy, 0}, 0.5));
    ASSERT_TRUE(loc.located) << loc.why_not;
    EXPECT_NEAR(loc.position.x, s * ux, 1e-9) << s;
    EXPECT_NEAR(loc.position.y, s * uy, 1e-9) << s;
    EXPECT_LT(loc.residual_m, 1e-9) << "the third sensor's arrival agrees";
  }
}

TEST(AeLocation, TooFewHitsAreNotLocatedAndNoPositionIsMadeUp) {
  const AeGeometry g = square_plate();
  const AeLocation two = locate_ae_event(g, arrivals(g, {0.5, 0.2, 0}, 0, 2));
  EXPECT_FALSE(two.located);
  EXPECT_EQ(two.why_not, "too few hits (2 of 3)");
  EXPECT_EQ(two.hits_used, 2u);
  // A hit of a channel the geometry does not place does not count.
  AeEventHits e = arrivals(g, {0.5, 0.2, 0}, 0, 2);
  e.hits.push_back({7, 0.001, 50, 1});
  EXPECT_FALSE(locate_ae_event(g, e).located);
}

TEST(AeLocation, GeometriesThatCannotLocateAreRefusedWithTheReason) {
  AeGeometry g = square_plate();
  EXPECT_NEAR(ae_event_definition_s(g), std::sqrt(2.0) / kSteel * 1.2, 1e-15) << "derived from the diagonal";
  g.event_definition_s = 0.001;
  EXPECT_EQ(ae_event_definition_s(g), 0.001);
  g.sensors[2] = g.sensors[0];
  EXPECT_THROW(validate_ae_geometry(g), std::invalid_argument);
  g = square_plate();
  g.velocity_m_s = 0;
  EXPECT_THROW(validate_ae_geometry(g), std::invalid_argument);
  g = square_plate();
  g.sensors.resize(2);
  EXPECT_THROW(validate_ae_geometry(g), std::invalid_argument) << "planar needs 3 sensors";
  g.kind = AeLocationKind::kLinear;
  EXPECT_NO_THROW(validate_ae_geometry(g));
}

TEST(AeEventBuilder, HitsWithinTheDefinitionTimeFormOneEventThenTheLockoutHolds) {
  AeEventBuilder b(400e-6, 1e-3);
  std::vector<AeEventHits> closed;
  b.add({0, 0.0, 70, 1}, closed);
  b.add({1, 100e-6, 65, 1}, closed);
  b.add({1, 150e-6, 64, 1}, closed);  // channel 1 again: a reflection, not a second arrival
  b.add({2, 400e-6, 60, 1}, closed);  // at the definition time: joins
  EXPECT_TRUE(closed.empty());
  b.add({3, 900e-6, 55, 1}, closed);  // past it: closes the event, and falls in its lockout (to 1.4 ms)
  ASSERT_EQ(closed.size(), 1u);
  ASSERT_EQ(closed[0].hits.size(), 3u);
  EXPECT_EQ(closed[0].hits[0].channel, 0u) << "the first-hit channel leads";
  EXPECT_EQ(closed[0].hits[1].channel, 1u);
  EXPECT_EQ(closed[0].hits[2].channel, 2u);
  EXPECT_EQ(b.repeated_channel_hits(), 1u);
  EXPECT_EQ(b.lockout_hits(), 1u);
  b.add({2, 1.3999e-3, 50, 1}, closed);
  EXPECT_EQ(b.lockout_hits(), 2u);
  b.add({1, 1.5e-3, 58, 1}, closed);  // after the lockout: a new event
  b.add({0, 1.6e-3, 57, 1}, closed);
  b.add({3, 1.0e-3, 57, 1}, closed);  // earlier than the last: out of order, left out
  EXPECT_EQ(b.out_of_order(), 1u);
  b.flush(1.8e-3, closed);
  EXPECT_EQ(closed.size(), 1u) << "its definition time has not passed at 1.8 ms";
  b.flush(std::numeric_limits<double>::infinity(), closed);
  ASSERT_EQ(closed.size(), 2u);
  ASSERT_EQ(closed[1].hits.size(), 2u);
  EXPECT_EQ(closed[1].hits[0].channel, 1u);
  EXPECT_THROW(AeEventBuilder(0, 0), std::invalid_argument);
}

TEST(AeClusterGrid, EventsAreCountedAndTheirEnergySummedPerCell) {
  AeClusterGrid grid(0.1);
  EXPECT_EQ(grid.add({0.05, 0.05, 0}, 2.0), AeClusterGrid::Key(0, 0));
  EXPECT_EQ(grid.add({0.09, 0.01, 0}, 3.0), AeClusterGrid::Key(0, 0));
  EXPECT_EQ(grid.add({0.15, 0.05, 0}, 1.0), AeClusterGrid::Key(1, 0));
  EXPECT_EQ(grid.add({-0.01, 0.35, 0}, 1.0), AeClusterGrid::Key(-1, 3)) << "cells below 0 too";
  ASSERT_EQ(grid.cells().size(), 3u);
  EXPECT_EQ(grid.cells().at({0, 0}).events, 2u);
  EXPECT_DOUBLE_EQ(grid.cells().at({0, 0}).energy, 5.0);
  EXPECT_THROW(AeClusterGrid(0), std::invalid_argument);
}

}  // namespace
}  // namespace vigil
