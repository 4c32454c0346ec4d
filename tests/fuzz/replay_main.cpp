// A driver for builds without libFuzzer (the normal test suite, with gcc): runs every file of the
// corpus directories given on the command line through the target once. A crash or trap fails
// the test, so every seed and every reproducer kept in tests/fuzz/corpus/ stays a regression test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t files = 0;
  for (int i = 1; i < argc; ++i)
    for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i])) {
      if (!e.is_regular_file()) continue;
      std::ifstream f(e.path(), std::ios::binary);
      const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++files;
    }
  std::printf("replayed %zu inputs\n", files);
  return files > 0 ? 0 : 1;
}
