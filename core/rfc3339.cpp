#include "core/rfc3339.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace vigil {

size_t rfc3339_utc_to(int64_t utc_ns, char* out) noexcept {
  int64_t sec = utc_ns / 1'000'000'000;
  int64_t ns = utc_ns % 1'000'000'000;
  if (ns < 0) {
    ns += 1'000'000'000;
    --sec;
  }
  // The date and time of the last two seconds asked for, kept per thread: an AE rig's events come
  // by the tens of thousands a second, each stamped twice (the sample's time and the sending
  // time, which differ by a second now and then, or always when a file is replayed).
  struct Prefix {
    int64_t sec = INT64_MIN;
    char text[kRfc3339Max - 10];
    int len = 0;
  };
  thread_local Prefix cache[2];
  thread_local unsigned older = 0;
  Prefix* p = cache[0].sec == sec ? &cache[0] : cache[1].sec == sec ? &cache[1] : nullptr;
  if (!p) {
    p = &cache[older];
    older ^= 1u;
    const time_t t = time_t(sec);
    tm parts{};
    gmtime_r(&t, &parts);
    const int n = std::snprintf(p->text, sizeof p->text, "%04d-%02d-%02dT%02d:%02d:%02d.", parts.tm_year + 1900,
                                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec);
    p->len = std::clamp(n, 0, int(sizeof p->text) - 1);
    p->sec = sec;
  }
  std::memcpy(out, p->text, size_t(p->len));
  char* d = out + p->len;
  for (int k = 8; k >= 0; --k, ns /= 10) d[k] = char('0' + ns % 10);
  d[9] = 'Z';
  return size_t(p->len) + 10;
}

std::string rfc3339_utc(int64_t utc_ns) {
  char buf[kRfc3339Max];
  return std::string(buf, rfc3339_utc_to(utc_ns, buf));
}

bool parse_rfc3339_utc(const std::string& s, int64_t& utc_ns) {
  // Strictly YYYY-MM-DDTHH:MM:SS: digits where digits belong (sscanf alone would take signs and
  // spaces), each field in range, and a year whose nanoseconds fit in int64 (1678..2261).
  if (s.size() < 20) return false;
  for (size_t k = 0; k < 19; ++k) {
    const char want = k == 4 || k == 7 ? '-' : k == 10 ? 'T' : k == 13 || k == 16 ? ':' : '0';
    if (want == '0' ? !(s[k] >= '0' && s[k] <= '9') : s[k] != want) return false;
  }
  auto num = [&](size_t at, size_t n) {
    int v = 0;
    for (size_t k = at; k < at + n; ++k) v = v * 10 + (s[k] - '0');
    return v;
  };
  const int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), se = num(17, 2);
  if (y < 1678 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return false;
  size_t i = 19;
  int64_t frac = 0;
  int digits = 0;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits)
      if (digits < 9) frac = frac * 10 + (s[i] - '0');
    if (digits == 0) return false;
  }
  if (i + 1 != s.size() || s[i] != 'Z') return false;
  for (int k = std::min(digits, 9); k < 9; ++k) frac *= 10;
  tm parts{};
  parts.tm_year = y - 1900;
  parts.tm_mon = mo - 1;
  parts.tm_mday = d;
  parts.tm_hour = h;
  parts.tm_min = mi;
  parts.tm_sec = se;
  utc_ns = int64_t(timegm(&parts)) * 1'000'000'000 + frac;
  return true;
}

}  // namespace vigil
