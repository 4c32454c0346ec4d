// Clock readings in nanoseconds; any thread, RT-safe (vDSO clock_gettime).
#pragma once

#include <cstdint>
#include <ctime>

namespace vigil {

inline int64_t mono_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline int64_t utc_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Sleeps until CLOCK_MONOTONIC reaches t_ns (returns at once if it has passed).
inline void sleep_until_mono_ns(int64_t t_ns) noexcept {
  timespec ts{};
  ts.tv_sec = time_t(t_ns / 1'000'000'000);
  ts.tv_nsec = long(t_ns % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

// Nanoseconds from the stream start to frame `index` at `rate_hz`, rounded down; exact for
// integer rates, monotonic in index.
inline int64_t frames_to_ns(uint64_t index, double rate_hz) noexcept {
  const auto rate = static_cast<unsigned __int128>(rate_hz);
  if (double(rate) == rate_hz && rate > 0)
    return int64_t((static_cast<unsigned __int128>(index) * 1'000'000'000u) / rate);
  return int64_t(double(index) * 1e9 / rate_hz);
}

// Picoseconds spanned by `frames` samples at `rate_hz`, rounded down; exact for integer rates
// (VITA 49 timestamps of packets and of delayed or decimated streams).
inline __int128 frames_to_ps(uint64_t frames, double rate_hz) noexcept {
  const auto rate = static_cast<unsigned __int128>(rate_hz);
  if (double(rate) == rate_hz && rate > 0) return __int128(frames) * 1'000'000'000'000 / __int128(rate);
  return __int128(double(frames) * 1e12 / rate_hz);
}

}  // namespace vigil
