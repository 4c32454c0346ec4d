// RFC 3339 UTC times with nanoseconds: written into events and sidecars, read from SigMF
// metadata. Thread: any (allocates; not for the real-time path).
#pragma once

#include <cstdint>
#include <string>

namespace vigil {

// "2026-11-21T21:21:21.123456789Z" for nanoseconds since the Unix epoch.
std::string rfc3339_utc(int64_t utc_ns);

// The same text into `out` (at least kRfc3339Max bytes, not terminated); returns its length. No
// allocation once the thread has formatted the seconds it is asked for (the last two are kept).
constexpr size_t kRfc3339Max = 48;
size_t rfc3339_utc_to(int64_t utc_ns, char* out) noexcept;

// Parses what rfc3339_utc writes (and any fraction length, 'Z' only). False when malformed.
bool parse_rfc3339_utc(const std::string& text, int64_t& utc_ns);

}  // namespace vigil
