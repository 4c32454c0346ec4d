// SyntheticSource: a deterministic test signal per channel (sines, noise, impulses, AE-like
// bursts, AE sources planted on a structure), paced in real time or rate_factor times faster. Thread: capture thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "acquisition/pace.hpp"
#include "acquisition/planted_ae_sources.hpp"
#include "acquisition/random.hpp"
#include "acquisition/source.hpp"
#include "acquisition/wall_clock.hpp"
#include "core/worker_pool.hpp"

namespace vigil {

struct SineSpec {
  double freq_hz = 0;     // 0 <= f < rate/2
  double amplitude = 0;   // fraction of full scale
  double phase_rad = 0;
  bool operator==(const SineSpec&) const = default;
};

struct ImpulseSpec {       // single-sample spikes
  double amplitude = 0;
  double period_s = 0;     // > 0: one every period_s, starting at offset_s
  double offset_s = 0;
  std::vector<double> times_s;  // and/or at these times (ascending)
  bool operator==(const ImpulseSpec&) const = default;
};

struct BurstSpec {         // AE-like burst: a * env(t) * sin(2 pi f t), t from the onset, where
  double amplitude = 0;    // env rises linearly from 0 to 1 over rise_s, then decays as
  double freq_hz = 0;      // exp(-(t - rise_s)/decay_s)
  double rise_s = 0;
  double decay_s = 0.001;  // time constant; a burst lasts rise_s + 10 of them
  double rate_hz = 0;      // > 0: onsets as a Poisson process of this mean rate (seeded)
  std::vector<double> times_s;  // and/or at these times (ascending)
  bool operator==(const BurstSpec&) const = default;
};

struct ChannelSignal {
  std::vector<SineSpec> sines;
  double noise_rms = 0;    // white Gaussian noise, fraction of full scale
  ImpulseSpec impulses;
  BurstSpec bursts;
  bool operator==(const ChannelSignal&) const = default;
};

struct SyntheticSpec {
  double rate_hz = 51200;
  uint32_t channels = 4;
  SampleFormat format = SampleFormat::kInt16;
  uint32_t chunk_frames = 1024;
  uint64_t seed = 1;
  double rate_factor = 1.0;    // 1 = real time, 20 = twenty times faster, 0 = unpaced
  double duration_s = 0;       // > 0: end after this much signal time
  // > 0: generate this much signal once, at construction, and repeat it (a cheap source for
  // benchmarks: generating sines and noise sample by sample costs ~90 ns a sample on one core).
  double loop_s = 0;
  // Threads that copy a chunk of 8 MiB or more from the loop (the capture thread and helpers);
  // 0: half the cores, 2 to 8.
  uint32_t copy_threads = 0;
  std::vector<ChannelSignal> signals;  // one per channel, or one for all channels
  // AE sources planted on a structure, reaching every channel's sensor (added to the signals).
  std::optional<PlantedAeSpec> ae_sources;
  bool operator==(const SyntheticSpec&) const = default;
};

class SyntheticSource final : public Source {
 public:
  // Throws std::invalid_argument for a spec outside its ranges.
  explicit SyntheticSource(SyntheticSpec spec);

  SourceFormat format() const noexcept override;
  std::string_view kind() const noexcept override { return "synthetic"; }
  ReadStatus read(Chunk& chunk) noexcept override;
  bool paced() const noexcept override { return spec_.rate_factor > 0; }
  uint64_t late_chunks() const noexcept override { return pace_.late_chunks(); }
  // Paced, a large chunk is produced in parts, each published when its last frame's time comes,
  // as an ADC's DMA fills a buffer (parts_of()).
  void set_progress(CaptureProgress* progress) noexcept override { progress_ = progress; }
  // The parts a paced read of `frames` frames publishes: one per kPartBytes, at most kMaxParts,
  // each at least kMinPartNs of signal at the pacing rate; 1 when there is no progress to publish.
  uint32_t parts_of(uint32_t frames) const noexcept;
  static constexpr size_t kPartBytes = size_t(512) << 10;
  static constexpr uint32_t kMaxParts = 16;
  static constexpr int64_t kMinPartNs = 200'000;

  // With ae_sources: planted_emissions (emissions of all planted sources so far).
  std::vector<std::pair<const char*, uint64_t>> counts() const override;

  // Frames produced so far (the next chunk's first frame index).
  uint64_t frames_produced() const noexcept { return next_frame_; }

  // Fills `frames` frames of channel c's engineering values (before quantisation) into out,
  // advancing that channel's state. Exposed for tests.
  void generate_channel(uint32_t c, uint32_t frames, float* out) noexcept;

 private:
  static constexpr size_t kMaxActiveBursts = 32;
  struct ActiveBurst {
    uint64_t onset = 0;
    bool active = false;
  };
  struct ChannelState {
    const ChannelSignal* signal = nullptr;
    Random noise{0};
    Random burst_rng{0};
    uint64_t next_frame = 0;
    uint64_t next_impulse = UINT64_MAX;  // from period_s
    uint64_t impulse_k = 0;              // impulses from period_s so far
    size_t next_impulse_time = 0;        // index into times_s
    uint64_t next_burst_poisson = UINT64_MAX;
    size_t next_burst_time = 0;
    std::array<ActiveBurst, kMaxActiveBursts> bursts{};
  };

  void start_burst(ChannelState& st, uint64_t onset) noexcept;

  SyntheticSpec spec_;
  std::vector<ChannelState> state_;
  std::unique_ptr<PlantedAeSources> planted_;
  std::vector<float> scratch_;  // one channel of one chunk
  std::vector<std::byte> loop_;  // loop_s of interleaved samples in the output format (loop_s > 0)
  uint64_t loop_frames_ = 0;
  // Chunks of kSplitCopyBytes or more are copied from the loop by several threads: one thread's
  // memcpy (~7 GB/s) would bound a benchmark past ~3 G int16 samples/s, not the service.
  static constexpr size_t kSplitCopyBytes = size_t(8) << 20;
  std::unique_ptr<WorkerPool> copy_pool_;
  void copy_from_loop(uint64_t at, uint32_t frames, std::byte* out) noexcept;
  void fill(uint32_t frames, std::byte* out) noexcept;  // generate `frames` frames, interleaved
  // The chunk's frames [first, first + frames) into out (its first frame): from the loop or generated.
  void produce(uint32_t first, uint32_t frames, std::byte* out) noexcept;
  CaptureProgress* progress_ = nullptr;
  uint64_t next_frame_ = 0;
  uint64_t end_frame_ = UINT64_MAX;
  Pace pace_;
  int64_t start_utc_ns_ = 0;
  WallClockWatch wall_clock_;  // steps of the UTC clock move start_utc_ns_
  bool started_ = false;
};

}  // namespace vigil
