// ReceiverWatch: whether a UDP destination answers "port unreachable" (no receiver listening),
// read off its sender's refusal count once a pass and logged on each change.
#pragma once

#include <cstdint>

namespace vigil {

class RtLog;
class UdpSender;

class ReceiverWatch {
 public:
  void look(const UdpSender& sender, int64_t now_mono_ns, RtLog& log) noexcept;
  bool absent() const noexcept { return absent_; }

 private:
  bool absent_ = false;
  uint64_t refused_seen_ = 0;  // the sender's refusal count at the last look
  uint64_t datagrams_at_refusal_ = 0;
  int64_t last_refusal_ns_ = 0;
};

}  // namespace vigil
