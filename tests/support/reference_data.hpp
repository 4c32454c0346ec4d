// Reads the raw float64 reference files in tests/data (see tests/data/README.md).
#pragma once

#include "tolerances.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace vigil::test {

inline std::vector<double> read_f64(const std::string& name) {
  const std::string path = std::string(VIGIL_TEST_DATA) + "/" + name;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open reference file " + path);
  const auto bytes = size_t(in.tellg());
  std::vector<double> v(bytes / sizeof(double));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * sizeof(double)));
  return v;
}

// |got - ref| <= 1e-5 * max(1, max|ref|) element by element: the float32 bar of
// shared/reference/README.md. Prints the first failing index, expected and got.
inline void expect_close_to_reference(const std::vector<float>& got, const std::vector<double>& ref,
                                      const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double max_ref = 1.0;
  for (double v : ref) max_ref = std::max(max_ref, std::fabs(v));
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], test::kReferenceRelMax * max_ref) << what << " index " << i;
}

}  // namespace vigil::test
