// SHA-256 against the FIPS 180-4 example vectors and, on fresh random inputs of every length
// around the block and padding boundaries, against the system's sha256sum.
#include "acquisition/sha256.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace vigil {
namespace {

TEST(Sha256, FipsExampleVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, MatchesSha256sumOnRandomInputs) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / ("vigil-sha-" + std::to_string(getpid()));
  std::mt19937 rng(std::random_device{}());
  for (size_t n : {1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u, 1000u, 4097u}) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = char(rng());
    std::ofstream(p, std::ios::binary) << bytes;
    FILE* f = popen(("sha256sum " + p.string()).c_str(), "r");
    ASSERT_NE(f, nullptr);
    char out[65] = {};
    ASSERT_EQ(std::fread(out, 1, 64, f), 64u);
    pclose(f);
    EXPECT_EQ(sha256_hex(bytes), std::string(out, 64)) << n << " bytes";
  }
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace vigil
