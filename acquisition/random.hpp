// Portable, seedable random numbers (xoshiro256** + Box-Muller): the same stream on every
// compiler and platform, unlike std::normal_distribution.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace vigil {

class Random {
 public:
  explicit Random(uint64_t seed) noexcept {
    for (auto& s : s_) s = splitmix64(seed);
  }

  uint64_t next_u64() noexcept {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in (0, 1]: never 0, so log() below is finite.
  double uniform() noexcept { return (double(next_u64() >> 11) + 1.0) * 0x1.0p-53; }

  double normal() noexcept {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double a = 2.0 * std::numbers::pi * uniform();
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

  // Exponentially distributed with the given mean.
  double exponential(double mean) noexcept { return -mean * std::log(uniform()); }

 private:
  static uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) noexcept {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4]{};
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace vigil
