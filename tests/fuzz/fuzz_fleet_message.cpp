// Fuzz target: vigil-listen --nats's message path. A message on a fleet subject is its three
// headers (Vigil-Rig, Vigil-Run, Vigil-Seq: here the input's first three lines) and its body (the
// rest): anything that is not a Vigil event is counted and skipped, the rest goes through the
// per-rig ordering, which must emit each (rig, run, seq) at most once and in increasing order.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "wire/event_line.hpp"
#include "wire/fleet_order.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static vigil::FleetOrder order(0.001, 64);  // kept across inputs, as the listener keeps it
  static std::map<std::string, uint64_t> next;  // per rig and run: the least seq it may emit next
  static int64_t now = 0;
  std::string_view in(reinterpret_cast<const char*>(data), size), field[3];
  for (auto& f : field) {
    const size_t nl = in.find('\n');
    f = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  }
  uint64_t seq = 0;
  std::string why;
  nlohmann::json ev;
  if (!vigil::parse_fleet_headers(field[0], field[1], field[2], seq, why)) {
    if (why.empty()) __builtin_trap();  // a refusal always says why
    return 0;
  }
  if (!vigil::parse_event_datagram(reinterpret_cast<const uint8_t*>(in.data()), in.size(), ev)) return 0;
  const std::string run(field[1]);
  const vigil::FleetOrder::Emit emit = [&](const std::string& rig, const std::string& r, uint64_t s, std::string_view) {
    uint64_t& least = next[rig + "/" + r];
    if (s < least) __builtin_trap();
    least = s + 1;
  };
  now += 1'000'000;
  order.take(std::string(field[0]), run, seq, in, now, emit);
  if (size % 7 == 0) order.expire(now, emit);
  return 0;
}
