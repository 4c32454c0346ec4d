// Acoustic-emission source location (issue 52): hits of several channels grouped into events
// (event definition and lockout times, one hit per channel), each event located from its arrival
// times on one clock, and located events counted on a grid (clusters).
//
// Location kinds, as AE systems define them:
// - linear: sensors along a pipe or beam. The source lies between the first-hit sensor and the
//   neighbour that the wave reached next; its place on that segment follows from the two arrival
//   times: s = (s_a + s_b) / 2 + v (t_a - t_b) / 2. A time difference of the whole spacing or more
//   says only "at or beyond the first-hit sensor": not locatable there.
// - planar: a plate or vessel wall, sensors at (x, y). Geiger's method: the position and origin
//   time that best explain every arrival, t_i = t0 + |p - s_i| / v, by Gauss-Newton iterations
//   with Levenberg-Marquardt damping on the least squares of the arrival residuals, from several
//   starting points (inside and around the array: a source outside it has a shallow minimum that
//   a start inside can miss), the least residual kept. Three hits fix the three unknowns, but two
//   positions may explain them exactly: then the one inside the array, else the one nearest the
//   first-hit sensor, is taken (a fourth hit decides, and gives the residual its meaning).
// Pure math: no threads, no I/O; times in seconds on the hits' common clock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vigil {

enum class AeLocationKind { kLinear, kPlanar };

struct AePoint {
  double x = 0, y = 0, z = 0;
  bool operator==(const AePoint&) const = default;
};

struct AeGeometry {
  AeLocationKind kind = AeLocationKind::kPlanar;
  std::vector<AePoint> sensors;  // by channel
  double velocity_m_s = 3000;    // of the wave the arrivals mark in the structure
  // Hits within this time of an event's first hit join it; 0: the largest sensor spacing over the
  // velocity, times definition_margin (the longest a wave from inside the array can take between
  // two sensors, with room for the arrival's own uncertainty).
  double event_definition_s = 0;
  double definition_margin = 1.2;
  // After an event closes (its first hit + the definition time), hits within this time are
  // reflections and late arrivals of it: counted, not used.
  double event_lockout_s = 0;
  // How far an arrival time may be off (one sample period where arrivals are sample-exact): a
  // linear time difference within this of the whole spacing counts as the whole spacing.
  double timing_uncertainty_s = 0;
  bool operator==(const AeGeometry&) const = default;
};

// The definition time in force: set, or derived (see AeGeometry). Throws std::invalid_argument
// for a geometry that cannot locate: fewer than 2 sensors, a velocity not above 0, two sensors
// at one place.
double ae_event_definition_s(const AeGeometry& g);
void validate_ae_geometry(const AeGeometry& g);

struct AeArrival {
  uint32_t channel = 0;
  double time_s = 0;     // arrival time of the hit
  double amplitude = 0;  // as the hit reports it (e.g. dB_AE)
  double energy = 0;     // likewise (e.g. eu)
};

// An event's hits in arrival order, one per channel: the first is the first-hit channel.
struct AeEventHits {
  std::vector<AeArrival> hits;
};

// Groups hits, in arrival order, into events. An event opens at a hit, takes every later hit of
// another channel within the definition time (a channel's second hit in that time is counted and
// left out), and closes with the first hit past it; the lockout time then follows.
class AeEventBuilder {
 public:
  AeEventBuilder(double definition_s, double lockout_s);
  // One hit; events it closes are appended to `closed`. Hits must come in arrival order (one
  // earlier than the last is counted in out_of_order() and left out).
  void add(const AeArrival& hit, std::vector<AeEventHits>& closed);
  // Closes the open event if its definition time has passed by `now_s` (or at once with
  // now_s = infinity: the end of the input).
  void flush(double now_s, std::vector<AeEventHits>& closed);

  uint64_t lockout_hits() const { return lockout_hits_; }
  uint64_t repeated_channel_hits() const { return repeated_channel_hits_; }
  uint64_t out_of_order() const { return out_of_order_; }

 private:
  void close(std::vector<AeEventHits>& closed);

  double definition_s_, lockout_s_;
  AeEventHits open_;
  double lockout_until_s_ = -1e300;
  double last_time_s_ = -1e300;
  uint64_t lockout_hits_ = 0, repeated_channel_hits_ = 0, out_of_order_ = 0;
};

struct AeLocation {
  bool located = false;
  std::string why_not;  // when not located: too few hits, beyond an end sensor, did not converge
  AePoint position;
  double origin_time_s = 0;  // when the emission left the source
  double residual_s = 0;     // RMS of the arrivals' residuals (0 where the hits fix it exactly)
  double residual_m = 0;     // the same times the velocity
  uint32_t hits_used = 0;
  uint32_t iterations = 0;
  bool inside = false;  // within the sensors' segment (linear) or their convex hull (planar)
};

// The fewest hits each kind locates from: 2 linear, 3 planar.
uint32_t ae_min_hits(AeLocationKind kind);

// Locates one event (hits in arrival order, channels within the geometry's sensors).
AeLocation locate_ae_event(const AeGeometry& g, const AeEventHits& event);

// Located events counted per square cell of `cell_m` (x, y): a cluster is a cell's events.
class AeClusterGrid {
 public:
  explicit AeClusterGrid(double cell_m);
  struct Cell {
    uint64_t events = 0;
    double energy = 0;
  };
  using Key = std::pair<int64_t, int64_t>;  // floor(x / cell), floor(y / cell)
  // Counts the event; returns its cell.
  Key add(const AePoint& p, double energy);
  const std::map<Key, Cell>& cells() const { return cells_; }
  double cell_m() const { return cell_m_; }

 private:
  double cell_m_;
  std::map<Key, Cell> cells_;
};

}  // namespace vigil
