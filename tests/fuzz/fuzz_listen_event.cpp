// Fuzz target: vigil-listen's event path. Any datagram on the event port is parsed (whole, or line
// by line: framing: lines), each event's text lying inside the datagram, its seq
// accounted by the stream monitor, and printed as a line (and as JSON with --json); nothing may
// throw or crash, and a line always starts with "event ". The web view's model takes every event
// too (layouts, hits, the log) and its updates must stay within their byte budget. The seq-only
// reader must agree with the tree on every event.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "wire/event_line.hpp"
#include "wire/stream_monitor.hpp"
#include "web/live_view.hpp"

namespace {

void on_event(nlohmann::json& ev, size_t size) {
  static vigil::StreamMonitor monitor;  // kept across inputs, as the listener keeps it
  monitor.on_event_seq(size % 2 ? "127.0.0.1:1" : "127.0.0.1:2", ev["seq"].get<uint64_t>());
  const std::string line = vigil::event_line(ev);
  if (line.compare(0, 6, "event ") != 0) __builtin_trap();
  (void)nlohmann::json{{"kind", "event"}, {"event", ev}}.dump();  // the --json form
  static vigil::web::LiveView view([] {
    vigil::web::LiveView::Options o;
    o.max_update_bytes = 200'000;
    return o;
  }());
  static uint64_t inputs = 0;
  view.on_event(ev);
  // Log lines are clipped and thinned before the budget gives: no stream here, so it always holds.
  if (++inputs % 64 == 0 && view.update(nlohmann::json::object(), monitor).size() > 200'000) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The seq-only reader (the listener's --json and --quiet path) must find the same events, with
  // the same text spans and seqs, as the tree.
  std::vector<std::pair<const uint8_t*, uint64_t>> tree;
  vigil::for_each_event(data, size, [&](const uint8_t* text, size_t bytes, nlohmann::json* ev) {
    if (text < data || bytes > size || text + bytes > data + size) __builtin_trap();
    tree.emplace_back(text + bytes, ev ? (*ev)["seq"].get<uint64_t>() + 1 : 0);
    if (ev) on_event(*ev, size);
  });
  size_t i = 0;
  vigil::for_each_event_seq(data, size, [&](const uint8_t* text, size_t bytes, const uint64_t* seq) {
    if (i >= tree.size() || tree[i].first != text + bytes || tree[i].second != (seq ? *seq + 1 : 0)) __builtin_trap();
    ++i;
  });
  if (i != tree.size()) __builtin_trap();
  return 0;
}
