// JSON event datagrams: one object per datagram with type, per-sender seq and RFC 3339 UTC time.
// Thread: output thread (allocates; never on the pipeline thread).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/rfc3339.hpp"  // rfc3339_utc, parse_rfc3339_utc
#include "wire/event_text.hpp"

namespace vigil {

class EventEncoder {
 public:
  // Adds "type", "seq" (0, 1, 2, ... per encoder) and "time" to body and serialises it.
  std::string encode(const std::string& type, nlohmann::json body, int64_t utc_ns) {
    return encode_with(type, std::move(body), utc_ns, seq_++);
  }
  // The next `count` seqs, for events formatted elsewhere (on several threads) with the two below.
  uint64_t reserve(uint64_t count) noexcept {
    const uint64_t first = seq_;
    seq_ += count;
    return first;
  }
  static std::string encode_with(const std::string& type, nlohmann::json body, int64_t utc_ns, uint64_t seq);
  // The same for an object written as text (begun, not ended): adds the three and ends it.
  static const std::string& finish_with(std::string_view type, EventText& text, int64_t utc_ns, uint64_t seq);
  uint64_t next_seq() const noexcept { return seq_; }
  void set_next_seq(uint64_t seq) noexcept { seq_ = seq; }  // a rebuilt service continues the count

 private:
  uint64_t seq_ = 0;
};

}  // namespace vigil
