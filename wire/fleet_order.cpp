#include "wire/fleet_order.hpp"

#include <charconv>

namespace vigil {

void FleetOrder::take(const std::string& rig, const std::string& run, uint64_t seq, std::string_view text,
                      int64_t now_ns, const Emit& emit) {
  FleetRigStats& st = stats_[rig];
  st.last_seen_ns = now_ns;
  auto [it, fresh_run] = runs_.try_emplace({rig, run});
  Run& r = it->second;
  if (fresh_run) ++st.runs;
  if (!r.started) {  // the first message read of this run: a reader may start in its middle
    r.started = true;
    r.next = seq;
  }
  if (seq < r.next || r.held.count(seq)) {
    ++st.duplicates;
    return;
  }
  if (seq == r.next) {
    ++st.events;
    emit(rig, run, seq, text);
    ++r.next;
    drain(rig, run, r, st, emit);
    return;
  }
  r.held.emplace(seq, std::make_pair(now_ns, std::string(text)));
  ++st.held;
  if (r.held.size() > max_held_) {  // too much waiting: the seqs before the oldest held are a gap
    const uint64_t first = r.held.begin()->first;
    ++st.gaps;
    st.missing += first - r.next;
    r.next = first;
    drain(rig, run, r, st, emit);
  }
}

void FleetOrder::drain(const std::string& rig, const std::string& run, Run& r, FleetRigStats& st, const Emit& emit) {
  for (auto h = r.held.begin(); h != r.held.end() && h->first == r.next; h = r.held.erase(h)) {
    ++st.events;
    --st.held;
    emit(rig, run, h->first, h->second.second);
    ++r.next;
  }
}

void FleetOrder::expire(int64_t now_ns, const Emit& emit) {
  for (auto& [key, r] : runs_) {
    FleetRigStats& st = stats_[key.first];
    // While the oldest held message has waited too long, the seqs before it are a gap.
    while (!r.held.empty() && (now_ns == INT64_MAX || now_ns - r.held.begin()->second.first >= hold_ns_)) {
      const uint64_t first = r.held.begin()->first;
      ++st.gaps;
      st.missing += first - r.next;
      r.next = first;
      drain(key.first, key.second, r, st, emit);
    }
  }
}

bool parse_fleet_headers(std::string_view rig, std::string_view run, std::string_view seq, uint64_t& seq_out,
                         std::string& why) {
  auto name_ok = [](std::string_view v) {
    if (v.empty() || v.size() > 64) return false;
    for (const char c : v)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
        return false;
    return true;
  };
  if (!name_ok(rig)) {
    why = "no Vigil-Rig header, or not a rig name";
    return false;
  }
  if (!name_ok(run)) {
    why = "no Vigil-Run header, or not a run id";
    return false;
  }
  const auto [end, ec] = std::from_chars(seq.data(), seq.data() + seq.size(), seq_out);
  if (seq.empty() || ec != std::errc() || end != seq.data() + seq.size()) {
    why = "no Vigil-Seq header, or not a number";
    return false;
  }
  return true;
}

}  // namespace vigil
