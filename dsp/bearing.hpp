// Rolling-element bearing defect frequencies from geometry and shaft speed (the standard
// kinematic formulas, e.g. Randall & Antoni, "Rolling element bearing diagnostics", MSSP 2011):
// with r = (d/D) cos(contact angle), n rollers, shaft frequency fr,
//   BPFO = n/2 fr (1 - r), BPFI = n/2 fr (1 + r), FTF = fr/2 (1 - r), BSF = D/(2d) fr (1 - r^2).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace vigil {

struct BearingGeometry {
  uint32_t rollers = 0;
  double roller_diameter = 0;  // d, any length unit
  double pitch_diameter = 0;   // D, same unit
  double contact_angle_deg = 0;
  bool operator==(const BearingGeometry&) const = default;
};

struct BearingFrequencies {
  double bpfo = 0, bpfi = 0, bsf = 0, ftf = 0;  // Hz
  bool operator==(const BearingFrequencies&) const = default;
};

inline BearingFrequencies bearing_frequencies(const BearingGeometry& g, double shaft_hz) noexcept {
  const double r = g.roller_diameter / g.pitch_diameter * std::cos(g.contact_angle_deg * std::numbers::pi / 180.0);
  BearingFrequencies f;
  f.bpfo = g.rollers / 2.0 * shaft_hz * (1 - r);
  f.bpfi = g.rollers / 2.0 * shaft_hz * (1 + r);
  f.ftf = shaft_hz / 2.0 * (1 - r);
  f.bsf = g.pitch_diameter / (2.0 * g.roller_diameter) * shaft_hz * (1 - r * r);
  return f;
}

}  // namespace vigil
