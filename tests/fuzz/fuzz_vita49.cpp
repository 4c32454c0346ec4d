// Fuzz target: what vigil-listen does with any datagram on its data port: the VRL frame reader
// (a datagram may be a frame of packets), the VITA 49 decoder on each packet, then (when it
// accepts the packet) the stream monitor's accounting. Each packet must lie inside the datagram,
// and a decoded packet inside its packet; nothing may crash or grow without bound. With --web the packet also goes to
// the web view's model, whose updates must stay within their byte budget.
#include <cstddef>
#include <cstdint>

#include "wire/stream_monitor.hpp"
#include "wire/vita49.hpp"
#include "wire/vrl_frame.hpp"
#include "web/live_view.hpp"

namespace {

void on_packet(const uint8_t* data, size_t size) {
  static vigil::StreamMonitor monitor;  // across inputs, as in a long-running listener
  vigil::vita49::Decoded d;
  if (!vigil::vita49::decode(data, size, d)) return;
  if (d.type == vigil::vita49::PacketType::kSignalDataWithStreamId && d.samples * 4 > size) __builtin_trap();
  monitor.on_packet(d);
  if (monitor.streams().size() > 100000) __builtin_trap();  // bounded by distinct stream ids
  static vigil::web::LiveView view([] {
    vigil::web::LiveView::Options o;
    o.max_streams = 16;
    o.max_update_bytes = 50'000;
    return o;
  }());
  static uint64_t inputs = 0;
  view.on_packet(d, monitor.streams().at(d.stream_id));
  if (view.streams() > 16) __builtin_trap();
  if (++inputs % 256 == 0 && view.update(nlohmann::json::object(), monitor).size() > 50'000) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::vrl::for_each_packet(data, size, [&](const uint8_t* packet, size_t bytes) {
    if (packet < data || bytes > size || packet + bytes > data + size) __builtin_trap();
    on_packet(packet, bytes);
  });
  return 0;
}
