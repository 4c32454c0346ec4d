#include "dsp/ae_location.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace vigil {
namespace {

double distance(const AePoint& a, const AePoint& b) {
  return std::sqrt((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z));
}

double largest_spacing(const AeGeometry& g) {
  double most = 0;
  for (size_t i = 0; i < g.sensors.size(); ++i)
    for (size_t j = i + 1; j < g.sensors.size(); ++j) most = std::max(most, distance(g.sensors[i], g.sensors[j]));
  return most;
}

// The hits of channels the geometry places, in arrival order.
std::vector<AeArrival> placed_hits(const AeGeometry& g, const AeEventHits& event) {
  std::vector<AeArrival> hits;
  for (const AeArrival& h : event.hits)
    if (h.channel < g.sensors.size()) hits.push_back(h);
  std::stable_sort(hits.begin(), hits.end(), [](const AeArrival& a, const AeArrival& b) { return a.time_s < b.time_s; });
  return hits;
}

void finish_residual(const AeGeometry& g, AeLocation& loc, double sum_sq_m, size_t n) {
  loc.residual_m = std::sqrt(sum_sq_m / double(n));
  loc.residual_s = loc.residual_m / g.velocity_m_s;
}

// Linear location (see the header) along the line from the first sensor to the one farthest
// from it.
AeLocation locate_linear(const AeGeometry& g, const std::vector<AeArrival>& hits) {
  AeLocation loc;
  const AePoint& origin = g.sensors[0];
  size_t far = 0;
  for (size_t i = 1; i < g.sensors.size(); ++i)
    if (distance(origin, g.sensors[i]) > distance(origin, g.sensors[far])) far = i;
  const double len = distance(origin, g.sensors[far]);
  const AePoint u{(g.sensors[far].x - origin.x) / len, (g.sensors[far].y - origin.y) / len,
                  (g.sensors[far].z - origin.z) / len};
  auto along = [&](const AePoint& p) { return (p.x - origin.x) * u.x + (p.y - origin.y) * u.y + (p.z - origin.z) * u.z; };
  std::vector<double> s(g.sensors.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = along(g.sensors[i]);
  const double lo = *std::min_element(s.begin(), s.end()), hi = *std::max_element(s.begin(), s.end());

  // The first-hit sensor's neighbours along the line, and the one the wave reached first.
  const AeArrival& a = hits[0];
  const double sa = s[a.channel];
  const AeArrival* b = nullptr;
  double left = -std::numeric_limits<double>::infinity(), right = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == a.channel) continue;
    if (s[i] < sa) left = std::max(left, s[i]);
    if (s[i] > sa) right = std::min(right, s[i]);
  }
  for (const AeArrival& h : hits) {
    if (h.channel == a.channel || (s[h.channel] != left && s[h.channel] != right)) continue;
    if (b == nullptr || h.time_s < b->time_s) b = &h;
  }
  loc.hits_used = uint32_t(hits.size());
  if (b == nullptr) {
    loc.why_not = "no neighbour of the first-hit sensor was hit";
    return loc;
  }
  const double sb = s[b->channel], spacing = std::fabs(sb - sa);
  const double lag_m = g.velocity_m_s * (b->time_s - a.time_s);  // >= 0: a was hit first
  const bool end_sensor = sa == lo || sa == hi;
  double at;
  const double tol = std::max(1e-9 * spacing, g.velocity_m_s * g.timing_uncertainty_s);
  if (lag_m >= spacing - tol) {
    // The wave crossed the whole spacing: the source is at the first-hit sensor or beyond it.
    if (end_sensor) {
      loc.why_not = "at or beyond the end sensor of channel " + std::to_string(a.channel);
      return loc;
    }
    at = sa;
  } else {
    at = (sa + sb) / 2 + (sb > sa ? -1.0 : 1.0) * lag_m / 2;
  }
  loc.located = true;
  loc.position = {origin.x + u.x * at, origin.y + u.y * at, origin.z + u.z * at};
  loc.origin_time_s = a.time_s - std::fabs(at - sa) / g.velocity_m_s;
  double sum_sq = 0;
  for (const AeArrival& h : hits) {
    const double r = g.velocity_m_s * (h.time_s - loc.origin_time_s) - std::fabs(at - s[h.channel]);
    sum_sq += r * r;
  }
  finish_residual(g, loc, sum_sq, hits.size());
  loc.inside = at >= lo && at <= hi;
  return loc;
}

// Solves the 3x3 system m x = b by Gaussian elimination with partial pivoting; false if singular.
bool solve3(double m[3][3], double b[3], double x[3]) {
  for (int c = 0; c < 3; ++c) {
    int p = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[p][c])) p = r;
    if (std::fabs(m[p][c]) < 1e-300) return false;
    std::swap(m[p], m[c]);
    std::swap(b[p], b[c]);
    for (int r = c + 1; r < 3; ++r) {
      const double f = m[r][c] / m[c][c];
      for (int k = c; k < 3; ++k) m[r][k] -= f * m[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int r = 2; r >= 0; --r) {
    double v = b[r];
    for (int k = r + 1; k < 3; ++k) v -= m[r][k] * x[k];
    x[r] = v / m[r][r];
  }
  return true;
}

struct PlanarFit {
  double x, y, c;  // position and c = velocity x origin time (metres)
  double cost;     // sum of squared residuals, m^2
  uint32_t iterations;
  bool converged;
};

// Residuals in metres: rho_i = v t_i - c - |p - s_i| (t_i relative to the first hit).
double planar_cost(const AeGeometry& g, const std::vector<AeArrival>& hits, double x, double y, double c) {
  double cost = 0;
  for (const AeArrival& h : hits) {
    const AePoint& s = g.sensors[h.channel];
    const double r = g.velocity_m_s * (h.time_s - hits[0].time_s) - c - std::hypot(x - s.x, y - s.y);
    cost += r * r;
  }
  return cost;
}

// Geiger's method from (x, y): Gauss-Newton steps on (x, y, c), damped (Levenberg-Marquardt).
PlanarFit fit_planar(const AeGeometry& g, const std::vector<AeArrival>& hits, double x, double y, double scale_m) {
  double c = 0;
  for (const AeArrival& h : hits)
    c += g.velocity_m_s * (h.time_s - hits[0].time_s) - std::hypot(x - g.sensors[h.channel].x, y - g.sensors[h.channel].y);
  c /= double(hits.size());
  PlanarFit f{x, y, c, planar_cost(g, hits, x, y, c), 0, false};
  double lambda = 1e-3;
  for (uint32_t it = 1; it <= 200; ++it) {
    f.iterations = it;
    double a[3][3] = {}, grad[3] = {};
    for (const AeArrival& h : hits) {
      const AePoint& s = g.sensors[h.channel];
      const double d = std::max(std::hypot(f.x - s.x, f.y - s.y), 1e-12 * scale_m);
      const double j[3] = {-(f.x - s.x) / d, -(f.y - s.y) / d, -1.0};
      const double r = g.velocity_m_s * (h.time_s - hits[0].time_s) - f.c - d;
      for (int p = 0; p < 3; ++p) {
        grad[p] += j[p] * r;
        for (int q = 0; q < 3; ++q) a[p][q] += j[p] * j[q];
      }
    }
    bool stepped = false;
    for (int tries = 0; tries < 30 && !stepped; ++tries) {
      double m[3][3], b[3], step[3] = {};
      for (int p = 0; p < 3; ++p) {
        for (int q = 0; q < 3; ++q) m[p][q] = a[p][q];
        m[p][p] += lambda * std::max(a[p][p], 1e-12);
        b[p] = -grad[p];
      }
      if (!solve3(m, b, step)) {
        lambda *= 10;
        continue;
      }
      const double nx = f.x + step[0], ny = f.y + step[1], nc = f.c + step[2];
      const double cost = planar_cost(g, hits, nx, ny, nc);
      if (cost <= f.cost) {
        const double moved = std::sqrt(step[0] * step[0] + step[1] * step[1] + step[2] * step[2]);
        f = {nx, ny, nc, cost, it, false};
        lambda = std::max(lambda / 3, 1e-12);
        stepped = true;
        if (moved < 1e-12 * scale_m) {
          f.converged = true;
          return f;
        }
      } else {
        lambda *= 4;
      }
    }
    // No step lowers the cost: a minimum, to the precision the damping allows.
    if (!stepped) {
      f.converged = true;
      return f;
    }
  }
  return f;
}

// Whether p lies within the convex hull of the sensors (x, y), with a tolerance of `tol` metres.
bool inside_hull(const std::vector<AePoint>& sensors, double x, double y, double tol) {
  std::vector<std::pair<double, double>> pts;
  for (const AePoint& s : sensors) pts.emplace_back(s.x, s.y);
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  if (pts.size() < 3) return false;
  auto cross = [](const std::pair<double, double>& o, const std::pair<double, double>& a,
                  const std::pair<double, double>& b) {
    return (a.first - o.first) * (b.second - o.second) - (a.second - o.second) * (b.first - o.first);
  };
  std::vector<std::pair<double, double>> hull(2 * pts.size());
  size_t k = 0;
  for (size_t i = 0; i < pts.size(); ++i) {  // Andrew's monotone chain, counter-clockwise
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) --k;
    hull[k++] = pts[i];
  }
  for (size_t i = pts.size() - 1, t = k + 1; i > 0; --i) {
    while (k >= t && cross(hull[k - 2], hull[k - 1], pts[i - 1]) <= 0) --k;
    hull[k++] = pts[i - 1];
  }
  hull.resize(k - 1);
  if (hull.size() < 3) return false;
  for (size_t i = 0; i < hull.size(); ++i) {
    const auto& a = hull[i];
    const auto& b = hull[(i + 1) % hull.size()];
    const double len = std::hypot(b.first - a.first, b.second - a.second);
    if (cross(a, b, {x, y}) / len < -tol) return false;  // outside this edge by more than tol
  }
  return true;
}

AeLocation locate_planar(const AeGeometry& g, const std::vector<AeArrival>& hits) {
  AeLocation loc;
  loc.hits_used = uint32_t(hits.size());
  const double scale = largest_spacing(g);
  double cx = 0, cy = 0;
  for (const AeArrival& h : hits) {
    cx += g.sensors[h.channel].x;
    cy += g.sensors[h.channel].y;
  }
  cx /= double(hits.size());
  cy /= double(hits.size());
  const AePoint& first = g.sensors[hits[0].channel];
  // Starts: near the first-hit sensor (nudged toward the others, where the gradient is defined),
  // the hit sensors' centroid, beyond the first-hit sensor away from the centroid, and a ring
  // around the array.
  std::vector<std::pair<double, double>> starts = {{first.x + 0.05 * (cx - first.x), first.y + 0.05 * (cy - first.y)},
                                                   {cx, cy}};
  for (const double k : {1.0, 3.0}) starts.emplace_back(first.x + k * (first.x - cx), first.y + k * (first.y - cy));
  for (int i = 0; i < 8; ++i) {
    const double a = 2 * 3.14159265358979323846 * i / 8;
    starts.emplace_back(cx + 1.5 * scale * std::cos(a), cy + 1.5 * scale * std::sin(a));
  }
  std::vector<PlanarFit> fits;
  for (const auto& [x, y] : starts) {
    const PlanarFit f = fit_planar(g, hits, x, y, scale);
    if (f.converged && std::isfinite(f.cost)) fits.push_back(f);
  }
  if (fits.empty()) {
    loc.why_not = "the least squares did not converge";
    return loc;
  }
  // The least residual; among fits that explain the arrivals equally well (three hits, two
  // exact positions), the one inside the array, else the one nearest the first-hit sensor.
  double least = fits[0].cost;
  for (const PlanarFit& f : fits) least = std::min(least, f.cost);
  const double equal = least + 1e-12 * scale * scale;
  const PlanarFit* best = nullptr;
  bool best_inside = false;
  double best_near = 0;
  for (const PlanarFit& f : fits) {
    if (f.cost > equal) continue;
    const bool in = inside_hull(g.sensors, f.x, f.y, 1e-9 * scale);
    const double near = std::hypot(f.x - first.x, f.y - first.y);
    if (best == nullptr || (in && !best_inside) || (in == best_inside && near < best_near)) {
      best = &f;
      best_inside = in;
      best_near = near;
    }
  }
  loc.located = true;
  loc.iterations = best->iterations;
  loc.position = {best->x, best->y, 0};
  loc.origin_time_s = hits[0].time_s + best->c / g.velocity_m_s;
  finish_residual(g, loc, best->cost, hits.size());
  loc.inside = best_inside;
  return loc;
}

}  // namespace

void validate_ae_geometry(const AeGeometry& g) {
  if (g.sensors.size() < 2) throw std::invalid_argument("AE location needs at least 2 sensors");
  if (g.kind == AeLocationKind::kPlanar && g.sensors.size() < 3)
    throw std::invalid_argument("planar AE location needs at least 3 sensors");
  if (!(g.velocity_m_s > 0) || !std::isfinite(g.velocity_m_s))
    throw std::invalid_argument("the wave velocity must be above 0 m/s");
  if (!(g.event_definition_s >= 0) || !(g.event_lockout_s >= 0) || !(g.definition_margin >= 1) ||
      !(g.timing_uncertainty_s >= 0))
    throw std::invalid_argument(
        "event definition, lockout and timing uncertainty must be 0 s or more, the margin 1 or more");
  for (size_t i = 0; i < g.sensors.size(); ++i)
    for (size_t j = i + 1; j < g.sensors.size(); ++j)
      if (distance(g.sensors[i], g.sensors[j]) == 0)
        throw std::invalid_argument("sensors of channels " + std::to_string(i) + " and " + std::to_string(j) +
                                    " are at the same place");
}

double ae_event_definition_s(const AeGeometry& g) {
  validate_ae_geometry(g);
  if (g.event_definition_s > 0) return g.event_definition_s;
  return largest_spacing(g) / g.velocity_m_s * g.definition_margin;
}

uint32_t ae_min_hits(AeLocationKind kind) { return kind == AeLocationKind::kLinear ? 2 : 3; }

AeLocation locate_ae_event(const AeGeometry& g, const AeEventHits& event) {
  const std::vector<AeArrival> hits = placed_hits(g, event);
  if (hits.size() < ae_min_hits(g.kind)) {
    AeLocation loc;
    loc.hits_used = uint32_t(hits.size());
    loc.why_not = "too few hits (" + std::to_string(hits.size()) + " of " + std::to_string(ae_min_hits(g.kind)) + ")";
    return loc;
  }
  return g.kind == AeLocationKind::kLinear ? locate_linear(g, hits) : locate_planar(g, hits);
}

AeEventBuilder::AeEventBuilder(double definition_s, double lockout_s)
    : definition_s_(definition_s), lockout_s_(lockout_s) {
  if (!(definition_s > 0) || !(lockout_s >= 0))
    throw std::invalid_argument("the event definition time must be above 0 and the lockout 0 or more");
}

void AeEventBuilder::close(std::vector<AeEventHits>& closed) {
  lockout_until_s_ = open_.hits[0].time_s + definition_s_ + lockout_s_;
  closed.push_back(std::move(open_));
  open_ = {};
}

void AeEventBuilder::add(const AeArrival& hit, std::vector<AeEventHits>& closed) {
  if (hit.time_s < last_time_s_) {
    ++out_of_order_;
    return;
  }
  last_time_s_ = hit.time_s;
  if (!open_.hits.empty() && hit.time_s - open_.hits[0].time_s > definition_s_) close(closed);
  if (open_.hits.empty()) {
    if (hit.time_s < lockout_until_s_) {
      ++lockout_hits_;
      return;
    }
    open_.hits.push_back(hit);
    return;
  }
  for (const AeArrival& h : open_.hits)
    if (h.channel == hit.channel) {
      ++repeated_channel_hits_;
      return;
    }
  open_.hits.push_back(hit);
}

void AeEventBuilder::flush(double now_s, std::vector<AeEventHits>& closed) {
  if (!open_.hits.empty() && now_s - open_.hits[0].time_s > definition_s_) close(closed);
}

AeClusterGrid::AeClusterGrid(double cell_m) : cell_m_(cell_m) {
  if (!(cell_m > 0) || !std::isfinite(cell_m)) throw std::invalid_argument("the cluster cell must be above 0 m");
}

AeClusterGrid::Key AeClusterGrid::add(const AePoint& p, double energy) {
  const Key key{int64_t(std::floor(p.x / cell_m_)), int64_t(std::floor(p.y / cell_m_))};
  Cell& c = cells_[key];
  ++c.events;
  c.energy += energy;
  return key;
}

}  // namespace vigil
