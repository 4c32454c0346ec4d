#include "sinks/receiver_watch.hpp"

#include "core/rt_log.hpp"
#include "wire/udp_sender.hpp"

namespace vigil {

void ReceiverWatch::look(const UdpSender& sender, int64_t now, RtLog& log) noexcept {
  const SendCounters& c = sender.counters();
  const uint64_t refused = c.refused.load(std::memory_order_relaxed);
  const uint64_t datagrams = c.datagrams.load(std::memory_order_relaxed);
  if (refused != refused_seen_) {
    refused_seen_ = refused;
    last_refusal_ns_ = now;
    datagrams_at_refusal_ = datagrams;
    if (!absent_) {
      absent_ = true;
      log.printf(4, "output %s: no receiver there (port unreachable); sending goes on, failures are counted",
                 sender.destination().c_str());
    }
  } else if (absent_ && now - last_refusal_ns_ > 3'000'000'000 && datagrams - datagrams_at_refusal_ >= 10) {
    // Refusals come every other datagram on loopback and about once a second where the peer
    // rate-limits ICMP: 3 s and 10 datagrams without one means someone is listening again.
    absent_ = false;
    log.printf(5, "output %s: the receiver is back", sender.destination().c_str());
  }
}

}  // namespace vigil
