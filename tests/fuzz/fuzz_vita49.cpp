// Fuzz target: what vigil-listen does with any datagram on its data port: the VITA 49 decoder,
// then (when it accepts the packet) the stream monitor's accounting. A decoded packet must lie
// inside the datagram; nothing may crash or grow without bound.
#include <cstddef>
#include <cstdint>

#include "pipeline/stream_monitor.hpp"
#include "pipeline/vita49.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static vigil::StreamMonitor monitor;  // across inputs, as in a long-running listener
  vigil::vita49::Decoded d;
  if (!vigil::vita49::decode(data, size, d)) return 0;
  if (d.type == vigil::vita49::PacketType::kSignalDataWithStreamId && d.samples * 4 > size) __builtin_trap();
  monitor.on_packet(d);
  if (monitor.streams().size() > 100000) __builtin_trap();  // bounded by distinct stream ids
  return 0;
}
