#include "acquisition/rfc3339.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace vigil {

std::string rfc3339_utc(int64_t utc_ns) {
  int64_t sec = utc_ns / 1'000'000'000;
  int64_t ns = utc_ns % 1'000'000'000;
  if (ns < 0) {
    ns += 1'000'000'000;
    --sec;
  }
  const time_t t = time_t(sec);
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", parts.tm_year + 1900, parts.tm_mon + 1,
                parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, static_cast<long long>(ns));
  return buf;
}

bool parse_rfc3339_utc(const std::string& s, int64_t& utc_ns) {
  int y, mo, d, h, mi, se;
  int used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &used) != 6 || used != 19)
    return false;
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
