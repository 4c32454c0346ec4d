// PlantedAeSources: acoustic-emission sources planted on a structure for the synthetic source
// (issue 52), so a demo or a test shows a crack. Each emission of a source at (x, y, z) reaches
// every sensor (one a channel) after distance / velocity, as a burst (the synthetic source's
// burst shape: linear rise, exponential decay, a sine carrier) whose amplitude falls with
// distance by the material's attenuation (dB/m) and the geometric spreading of the wave.
//
// Arrivals keep their fraction of a sample (the burst is evaluated at the exact time since its
// arrival), as a real sensor's would: a locator sees the sampling's rounding, not the planter's.
// Emissions come at given times and/or as a Poisson process of a given mean rate (seeded, one
// stream a source): every value is a function of the seed and the frame index alone, whatever
// the chunk size. Thread: the synthetic source's (capture thread); no allocation after
// construction beyond the emissions due (a few a chunk).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <vector>

#include "acquisition/random.hpp"

namespace vigil {

struct PlantedAeSensor {
  double x_m = 0, y_m = 0, z_m = 0;
  bool operator==(const PlantedAeSensor&) const = default;
};

enum class AeSpreading { kNone, kCylindrical, kSpherical };

struct PlantedAeSource {
  double x_m = 0, y_m = 0, z_m = 0;
  double amplitude = 0;          // fraction of full scale at reference_m from the source
  double rate_hz = 0;            // > 0: emissions as a Poisson process of this mean rate
  std::vector<double> times_s;   // and/or at these times (ascending)
  bool operator==(const PlantedAeSource&) const = default;
};

struct PlantedAeSpec {
  std::vector<PlantedAeSensor> sensors;  // by channel: as many as the source has channels
  double velocity_m_s = 3000;
  double attenuation_db_m = 0;           // material damping, beyond reference_m
  // Geometric spreading beyond reference_m: none; cylindrical (1/sqrt(r): a plate wave);
  // spherical (1/r: a wave in a solid body).
  AeSpreading spreading = AeSpreading::kCylindrical;
  double reference_m = 0.1;              // a sensor nearer than this gets the source's amplitude
  double freq_hz = 150e3;                // the burst's carrier, rise and decay (as BurstSpec's)
  double rise_s = 20e-6;
  double decay_s = 100e-6;
  std::vector<PlantedAeSource> sources;
  bool operator==(const PlantedAeSpec&) const = default;
};

class PlantedAeSources {
 public:
  // Throws std::invalid_argument for a spec outside its ranges or sensors not one a channel.
  PlantedAeSources(PlantedAeSpec spec, double rate_hz, uint32_t channels, uint64_t seed);

  // Adds channel c's arrivals to out[0..frames) (frames first_frame.. of the stream). Channels
  // may be filled in any order, each in increasing frames.
  void add(uint32_t c, uint64_t first_frame, uint32_t frames, float* out) noexcept;

  // An arrival's amplitude at distance r_m (the source's amplitude at reference_m).
  double amplitude_at(double amplitude, double r_m) const noexcept;
  // Emissions so far (planned up to the latest frame asked for). Any thread.
  uint64_t emissions() const noexcept { return emissions_.load(std::memory_order_relaxed); }

  static constexpr size_t kMaxActive = 32;  // bursts sounding at once on a channel

 private:
  struct Arrival {
    double onset_frames = 0;  // exact, in frames of the stream
    double amplitude = 0;
  };
  struct Channel {
    std::deque<Arrival> due;  // in onset order
    std::array<Arrival, kMaxActive> active{};
    std::array<bool, kMaxActive> sounding{};
  };
  struct Schedule {
    Random rng{0};
    double next_poisson_s = 0;  // infinity without a rate
    size_t next_time = 0;
  };
  // Plans every emission before frame `end`.
  void plan_until(uint64_t end) noexcept;
  void emit(const PlantedAeSource& s, double t_s) noexcept;

  PlantedAeSpec spec_;
  double rate_hz_;
  double burst_frames_;  // rise + 10 decay time constants
  std::vector<Channel> channels_;
  std::vector<Schedule> schedules_;
  uint64_t planned_to_ = 0;
  std::atomic<uint64_t> emissions_{0};
};

}  // namespace vigil
