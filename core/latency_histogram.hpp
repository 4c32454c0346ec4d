// LatencyHistogram: log-linear buckets of microseconds, recorded by one thread and read by
// another (relaxed atomics: a reader may see a sample or two in flight; counts never tear).
// 16 sub-buckets per power of two: quantiles within 6.25 % of the true value.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace vigil {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kGroups = 40;  // up to 2^40 us
  static constexpr int kBuckets = kGroups << kSubBits;

  // RT-safe.
  void record_us(uint64_t us) noexcept {
    buckets_[size_t(bucket_of(us))].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    uint64_t m = max_.load(std::memory_order_relaxed);
    while (us > m && !max_.compare_exchange_weak(m, us, std::memory_order_relaxed)) {
    }
  }
  void record_ns(int64_t ns) noexcept { record_us(ns <= 0 ? 0 : uint64_t(ns) / 1000); }

  uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  uint64_t max_us() const noexcept { return max_.load(std::memory_order_relaxed); }

  // Upper edge of the bucket holding quantile q (0 < q <= 1), capped at the maximum; 0 if empty.
  uint64_t quantile_us(double q) const noexcept {
    const uint64_t n = count();
    if (n == 0) return 0;
    auto rank = uint64_t(q * double(n) + 0.5);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
      seen += buckets_[size_t(b)].load(std::memory_order_relaxed);
      if (seen >= rank) {
        const uint64_t edge = upper_edge(b);
        return edge < max_us() ? edge : max_us();
      }
    }
    return max_us();
  }

  static int bucket_of(uint64_t us) noexcept {
    if (us < (1u << kSubBits)) return int(us);
    const int top = 63 - std::countl_zero(us);            // >= kSubBits
    const int group = top - kSubBits + 1;
    if (group >= kGroups) return kBuckets - 1;
    const int sub = int((us >> (top - kSubBits)) & ((1u << kSubBits) - 1));
    return (group << kSubBits) | sub;
  }
  static uint64_t upper_edge(int b) noexcept {
    const int group = b >> kSubBits, sub = b & ((1 << kSubBits) - 1);
    if (group == 0) return uint64_t(sub);
    const int shift = group - 1;
    return ((uint64_t((1 << kSubBits) | sub) + 1) << shift) - 1;
  }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> max_{0};
};

}  // namespace vigil
