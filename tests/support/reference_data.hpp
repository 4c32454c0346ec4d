// Reads the raw float64 reference files in tests/data (see tests/data/README.md).
#pragma once

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

}  // namespace vigil::test
