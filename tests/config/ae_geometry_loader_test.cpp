// The AE sensor geometry file (config/ae_geometry_loader): the shipped example reads as written;
// each kind of mistake is named at its line and column.
#include "config/ae_geometry_loader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace vigil {
namespace {

TEST(AeGeometryLoader, TheShippedExampleReadsAsWritten) {
  const AeGeometryResult r = load_ae_geometry_file(std::string(VIGIL_SOURCE_DIR) + "/config/examples/ae-plate-geometry.yaml");
  ASSERT_TRUE(r.file) << format_error("ae-plate-geometry.yaml", r.errors[0]);
  const AeGeometry& g = r.file->geometry;
  EXPECT_EQ(g.kind, AeLocationKind::kPlanar);
  EXPECT_EQ(g.velocity_m_s, 3000);
  ASSERT_EQ(g.sensors.size(), 4u);
  EXPECT_EQ(g.sensors[2].x, 1);
  EXPECT_EQ(g.sensors[2].y, 1);
  EXPECT_EQ(g.event_lockout_s, 0.001);
  EXPECT_EQ(r.file->cluster_cell_m, 0.05);
  EXPECT_FALSE(r.file->timing_uncertainty_set);
}

void expect_error(const std::string& yaml, int line, int column, const std::string& message) {
  const AeGeometryResult r = parse_ae_geometry(yaml);
  ASSERT_FALSE(r.file) << yaml;
  ASSERT_FALSE(r.errors.empty());
  EXPECT_EQ(r.errors[0].line, line) << r.errors[0].message;
  EXPECT_EQ(r.errors[0].column, column) << r.errors[0].message;
  EXPECT_NE(r.errors[0].message.find(message), std::string::npos) << r.errors[0].message;
}

TEST(AeGeometryLoader, MistakesAreNamedWhereTheyAre) {
  const std::string sensors = "sensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 1, y_m: 0}\n  - {x_m: 0, y_m: 1}\n";
  expect_error("kind: round\nvelocity_m_s: 3000\n" + sensors, 1, 7, "kind: expected planar or linear, got 'round'");
  expect_error("kind: planar\nvelocity_m_s: 0.5\n" + sensors, 2, 15, "velocity_m_s: 0.5 is out of range 1 ... 20000");
  expect_error("kind: planar\nvelocity_m_s: fast\n" + sensors, 2, 15, "velocity_m_s: expected a number");
  expect_error("kind: planar\nvelocity_m_s: 3000\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 1}\n  - {x_m: 0, y_m: 1}\n",
               5, 5, "sensors[1]: needs x_m and y_m");
  expect_error("kind: planar\nvelocity_m_s: 3000\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 1, y_m: 0, w_m: 2}\n"
               "  - {x_m: 0, y_m: 1}\n",
               5, 22, "unknown key 'w_m' in sensors[1]");
  expect_error("kind: planar\nvelocity_m_s: 3000\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {x_m: 1, y_m: 0}\n", 4, 3,
               "planar AE location needs at least 3 sensors");
  expect_error("kind: planar\nvelocity_m_s: [3000\n", 3, 1, "syntax error");
  expect_error("velocity_m_s: 3000\n" + sensors, 1, 1, "the geometry has no 'kind'");
  // A key that is itself a list or a mapping (a fuzzer's find: it threw out of the loader).
  expect_error("kind: planar\n[velocity_m_s]: 3000\n" + sensors, 2, 1,
               "a key in the geometry must be a plain name, not a list or a mapping");
  expect_error("kind: planar\nvelocity_m_s: 3000\nsensors:\n  - {x_m: 0, y_m: 0}\n  - {{x_m: 1}: 0, y_m: 0}\n"
               "  - {x_m: 0, y_m: 1}\n",
               5, 6, "a key in sensors[1] must be a plain name");
  expect_error("kind: planar\nvelocity_m_s: 3000\nvelocity_m_s: 2000\n" + sensors, 3, 1,
               "key 'velocity_m_s' given twice in the geometry (first at line 2, column 1)");
}

}  // namespace
}  // namespace vigil
