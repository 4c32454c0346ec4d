#include "acquisition/planted_ae_sources.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <stdexcept>

namespace vigil {
namespace {

[[noreturn]] void reject(const std::string& what) {
  throw std::invalid_argument("synthetic source: ae_sources: " + what);
}

void check_range(const std::string& name, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) {
    std::ostringstream m;
    m << name << " must be " << lo << ".." << hi << ", got " << v;
    reject(m.str());
  }
}

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

PlantedAeSources::PlantedAeSources(PlantedAeSpec spec, double rate_hz, uint32_t channels, uint64_t seed)
    : spec_(std::move(spec)), rate_hz_(rate_hz) {
  if (spec_.sensors.size() != channels)
    reject("the geometry has " + std::to_string(spec_.sensors.size()) + " sensors for " + std::to_string(channels) +
           " channels (one sensor a channel, in channel order)");
  if (spec_.sources.empty()) reject("no sources");
  check_range("velocity_m_s", spec_.velocity_m_s, 1.0, 1e5);
  check_range("attenuation_db_m", spec_.attenuation_db_m, 0.0, 1e4);
  check_range("reference_m", spec_.reference_m, 1e-6, 1e3);
  check_range("freq_hz", spec_.freq_hz, 0.0, rate_hz / 2);
  check_range("rise_s", spec_.rise_s, 0.0, 1.0);
  check_range("decay_s", spec_.decay_s, 1e-9, 1.0);
  for (size_t i = 0; i < spec_.sources.size(); ++i) {
    const PlantedAeSource& s = spec_.sources[i];
    const std::string w = "sources[" + std::to_string(i) + "].";
    check_range(w + "amplitude", s.amplitude, -1e6, 1e6);
    check_range(w + "rate_hz", s.rate_hz, 0.0, 1e5);
    if (!std::is_sorted(s.times_s.begin(), s.times_s.end())) reject(w + "times_s must be in ascending order");
    if (s.rate_hz == 0 && s.times_s.empty()) reject(w + "emits never: give rate_hz or times_s");
  }
  burst_frames_ = (spec_.rise_s + 10.0 * spec_.decay_s) * rate_hz_;
  channels_.resize(channels);
  schedules_.resize(spec_.sources.size());
  for (size_t i = 0; i < schedules_.size(); ++i) {
    Schedule& s = schedules_[i];
    s.rng = Random(seed * 7919u + 0x5eed0000u + i);  // apart from the channels' noise and bursts
    s.next_poisson_s = spec_.sources[i].rate_hz > 0 ? s.rng.exponential(1.0 / spec_.sources[i].rate_hz) : kNever;
  }
}

double PlantedAeSources::amplitude_at(double amplitude, double r_m) const noexcept {
  const double beyond = std::max(0.0, r_m - spec_.reference_m);
  const double ratio = std::max(r_m, spec_.reference_m) / spec_.reference_m;
  const double spreading = spec_.spreading == AeSpreading::kSpherical     ? 1.0 / ratio
                           : spec_.spreading == AeSpreading::kCylindrical ? 1.0 / std::sqrt(ratio)
                                                                          : 1.0;
  return amplitude * spreading * std::pow(10.0, -spec_.attenuation_db_m * beyond / 20.0);
}

void PlantedAeSources::emit(const PlantedAeSource& s, double t_s) noexcept {
  emissions_.fetch_add(1, std::memory_order_relaxed);
  for (size_t c = 0; c < channels_.size(); ++c) {
    const PlantedAeSensor& at = spec_.sensors[c];
    const double r = std::sqrt((s.x_m - at.x_m) * (s.x_m - at.x_m) + (s.y_m - at.y_m) * (s.y_m - at.y_m) +
                               (s.z_m - at.z_m) * (s.z_m - at.z_m));
    const Arrival a{(t_s + r / spec_.velocity_m_s) * rate_hz_, amplitude_at(s.amplitude, r)};
    std::deque<Arrival>& due = channels_[c].due;
    const auto pos = std::upper_bound(due.begin(), due.end(), a.onset_frames,
                                      [](double f, const Arrival& b) { return f < b.onset_frames; });
    due.insert(pos, a);
  }
}

void PlantedAeSources::plan_until(uint64_t end) noexcept {
  if (end <= planned_to_) return;
  // An emission before `end` may arrive within it; one at or after cannot (arrivals come later).
  const double end_s = double(end) / rate_hz_;
  for (size_t i = 0; i < schedules_.size(); ++i) {
    Schedule& sc = schedules_[i];
    const PlantedAeSource& s = spec_.sources[i];
    while (sc.next_time < s.times_s.size() && s.times_s[sc.next_time] < end_s) emit(s, s.times_s[sc.next_time++]);
    while (sc.next_poisson_s < end_s) {
      emit(s, sc.next_poisson_s);
      sc.next_poisson_s += sc.rng.exponential(1.0 / s.rate_hz);
    }
  }
  planned_to_ = end;
}

void PlantedAeSources::add(uint32_t c, uint64_t first_frame, uint32_t frames, float* out) noexcept {
  plan_until(first_frame + frames);
  Channel& ch = channels_[c];
  const double two_pi = 2.0 * std::numbers::pi;
  const double rise = spec_.rise_s * rate_hz_, per_frame = 1.0 / (spec_.decay_s * rate_hz_);
  const double cycles_per_frame = spec_.freq_hz / rate_hz_;
  for (uint32_t i = 0; i < frames; ++i) {
    const double n = double(first_frame + i);
    while (!ch.due.empty() && ch.due.front().onset_frames <= n) {  // starts sounding: a free slot or the oldest
      size_t slot = 0;
      for (size_t k = 0; k < kMaxActive; ++k) {
        if (!ch.sounding[k]) {
          slot = k;
          break;
        }
        if (ch.active[k].onset_frames < ch.active[slot].onset_frames) slot = k;
      }
      ch.active[slot] = ch.due.front();
      ch.sounding[slot] = true;
      ch.due.pop_front();
    }
    double v = 0;
    for (size_t k = 0; k < kMaxActive; ++k) {
      if (!ch.sounding[k]) continue;
      const double t = n - ch.active[k].onset_frames;  // frames since the exact arrival
      if (t >= burst_frames_) {
        ch.sounding[k] = false;
        continue;
      }
      const double env = t < rise ? t / rise : std::exp(-(t - rise) * per_frame);
      const double cycles = cycles_per_frame * t;
      v += ch.active[k].amplitude * env * std::sin(two_pi * (cycles - std::floor(cycles)));
    }
    out[i] += float(v);
  }
}

}  // namespace vigil
