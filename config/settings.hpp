// Settings: what a config file says, validated. Built by load_config(); read-only afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "acquisition/alsa_spec.hpp"
#include "acquisition/file_source.hpp"
#include "acquisition/iio_source.hpp"
#include "acquisition/synthetic_source.hpp"
#include "acquisition/vita49_source.hpp"
#include "dsp/ae_hit_detector.hpp"
#include "dsp/ae_location.hpp"
#include "dsp/fir_form.hpp"
#include "dsp/ae_cluster_alarm.hpp"
#include "dsp/alarm_rule.hpp"
#include "wire/endpoint.hpp"
#include "dsp/vibration_analyzer.hpp"
#include "dsp/fir_design.hpp"
#include "dsp/wavelet_denoiser.hpp"
#include "dsp/window.hpp"

namespace vigil {

struct BandSettings {
  std::string name;
  FilterType type = FilterType::kLowpass;
  double f1_hz = 0;  // cutoff, or lower edge of a bandpass/bandstop
  double f2_hz = 0;  // upper edge of a bandpass/bandstop
  bool operator==(const BandSettings&) const = default;
};

struct FirBankSettings {
  uint32_t taps = 255;
  uint32_t max_latency_frames = 0;  // the FFT forms may delay by up to this; 0 = one chunk
  FftPlanning fft_planning = FftPlanning::kEstimate;  // kMeasure: faster FFTs, planning at start
  FirForm form = FirForm::kAuto;                      // direct or FFT form (auto: the backend's choice)
  WindowSpec window;
  std::vector<BandSettings> bands;   // explicit bands, or (with crossover_hz) just their names
  std::vector<double> crossover_hz;  // non-empty: complementary bands split at these edges
  bool operator==(const FirBankSettings&) const = default;
};

struct BandRmsSettings {
  double window_s = 0.1;        // RMS over consecutive windows of this length
  double threshold = 0;         // raise when RMS > threshold
  double clear_threshold = -1;  // clear when RMS < clear_threshold (hysteresis); default 0.9*threshold
  bool operator==(const BandRmsSettings&) const = default;
};

struct VibrationRuleSettings {
  std::string name;
  VibrationMetric metric = VibrationMetric::kRms;
  AlarmRuleSettings levels;
  bool operator==(const VibrationRuleSettings&) const = default;
};

struct VibrationStageSettings {
  VibrationSettings analysis;
  std::vector<VibrationRuleSettings> rules;
  bool operator==(const VibrationStageSettings&) const = default;
};

// A wavelet_denoise stage: StreamingDenoiser on every lane of its input (windows of `window`
// samples, hop window/2, output delayed by `window`).
struct DenoiseStageSettings {
  std::string wavelet = "db8";
  unsigned levels = 0;  // 0: the deepest pywt allows for the window
  ThresholdMode mode = ThresholdMode::kSoft;
  NoiseEstimate noise = NoiseEstimate::kFinest;
  double threshold_scale = 1.0;
  uint32_t window = 1024;  // a power of two, 16..2^20
  DenoiseSpec spec() const { return {wavelet, levels, mode, noise, threshold_scale}; }
  bool operator==(const DenoiseStageSettings&) const = default;
};

// ae_locate: events located from an ae_hits stage's hits (docs/CONFIG.md).
struct AeLocateSettings {
  AeGeometry geometry;
  bool timing_uncertainty_set = false;  // else one sample period of the hits' stream
  double cluster_cell_m = 0;            // 0: no cluster counts
  std::string geometry_file;            // where `geometry:` named a file ("" : inline)
  // How long after its arrival the input stage may still emit a hit (its longest hit plus its hit
  // definition time): hits are put in arrival order over this window before events are built.
  double hits_settle_s = 0;
  std::optional<AeClusterAlarmSettings> cluster_alarm;  // on the cells' event or energy rate
  bool operator==(const AeLocateSettings&) const = default;
};

struct StageSettings {
  std::string name;
  std::string kind;   // "fir_bank" | "wavelet_denoise" | "band_rms" | "ae_hits" | "vibration" | "ae_locate"
  std::string input;  // "input" or an earlier stage's name (ae_locate: an ae_hits stage)
  bool optional = false;  // may be shed under overload (detectors only)
  std::variant<FirBankSettings, BandRmsSettings, AeHitSettings, VibrationStageSettings, DenoiseStageSettings,
               AeLocateSettings>
      params;
  bool operator==(const StageSettings&) const = default;
};

struct DataOutputSettings {
  std::string stream;            // "input" or a stage that outputs samples
  Endpoint destination{"127.0.0.1", 4991};
  bool jumbo = false;            // allow datagrams up to 8972 bytes instead of 1472 (IPv6: 8952, 1452)
  double context_interval_s = 2; // context packets at start and this often
  uint32_t decimation = 1;       // send every Nth sample (of a fir_bank whose bands fit under rate/2N)
  // "none": one VITA 49 packet a datagram; "vrl": VRL frames (VITA 49.1) of as many packets as fit
  // the datagram size above (fewer datagrams: cheaper to send and receive, docs/PROTOCOL.md)
  std::string framing = "none";
  MulticastSettings multicast;
  bool operator==(const DataOutputSettings&) const = default;
};

struct EventOutputSettings {
  Endpoint destination{"127.0.0.1", 4992};
  double status_interval_s = 1;
  // "none": one JSON event a datagram; "lines": the events of a pass several to a datagram, one
  // per line (newline-delimited JSON), up to the datagram size (docs/PROTOCOL.md)
  std::string framing = "none";
  bool jumbo = false;  // lines: datagrams up to 8972 bytes instead of 1472
  MulticastSettings multicast;
  bool operator==(const EventOutputSettings&) const = default;
};

// kind: nats: events to a NATS JetStream stream (docs/FLEET.md), published off the real-time
// threads by the sink's own thread.
struct FleetOutputSettings {
  std::vector<std::string> servers{"nats://127.0.0.1:4222"};
  std::string rig;             // "": the host name (up to its first '.'; other characters made '_')
  std::string subject_prefix;  // "": vigil.<rig>
  std::string stream = "VIGIL";  // created on the server when absent (subjects <prefix>.>)
  std::vector<std::string> types;  // "": every type (kFleetEventTypes)
  std::string ca, cert, key;       // TLS: the CA to trust; a client certificate and its key
  std::string creds;               // a NATS credentials file (JWT + NKey)
  std::string user, password;
  double status_interval_s = 1;    // status events and the rig's heartbeat in the vigil_rigs bucket
  double ack_timeout_s = 5;        // an unacknowledged message is resent after this long
  uint32_t queue_events = 100000;  // unsent events held while the broker is away; beyond, the oldest go
  uint32_t max_in_flight = 1024;   // published, not yet acknowledged
  std::string bucket = "vigil_rigs";  // key-value bucket of rig presence ("" : none)
  bool operator==(const FleetOutputSettings&) const = default;
};

// The event types a fleet output may select (`types`).
inline const std::vector<std::string> kFleetEventTypes = {
    "alarm", "ae_hit", "ae_level", "ae_event", "vibration", "health", "record", "source", "backend", "status", "start", "overload"};

struct PipelineSettings {
  std::string backend = "auto";     // auto | cpu | cuda
  uint32_t pool_chunks = 64;        // chunks in the capture pool
  uint32_t output_slots = 64;       // processed chunks that may wait for the output thread
  double deadline_budget_ms = 0;    // 0: one chunk period (at the pacing rate)
  double test_stall_after_s = 0;    // test-only fault: the pipeline stops processing after this
  std::string overload = "report";  // report | shed (skip `optional` stages while misses persist)
  double overload_restore_s = 10;   // shed stages come back after this long without a miss
  double test_optional_cost_ms = 0; // test-only fault: each optional stage takes this long per chunk
  double test_chunk_cost_ms = 0;    // test-only load: each chunk takes at least this long to process
  double test_chunk_cost_for_s = 0; // ... for this long from the first chunk (0: the whole run)
  int realtime_priority = 0;        // > 0: the capture thread runs SCHED_FIFO at this priority
  int capture_cpu = -1;             // >= 0: the capture thread is pinned to this CPU
  bool mlockall = false;            // lock all memory (pinned pages: no page faults on the RT path)
  std::string memory = "auto";      // auto | copy | mapped: how the CUDA stages' staging reaches the GPU
  bool busy_poll = false;           // the pipeline, output and pool threads spin instead of sleeping
  std::string gpu_keep_warm = "auto";  // auto | true | false: GPU work every 0.5 ms between chunks (auto: busy_poll)
  bool gpu_resident = true;         // CUDA: ae_hits on the GPU, reading the chunk where the stage before left it
  bool upload_in_parts = true;      // CUDA, raw input, paced: a chunk goes to the GPU in parts while it is captured
  std::string cuda_graphs = "fir_bank";  // all | fir_bank | off: which CUDA stages replay a chunk as a CUDA graph
  std::string fft_wisdom;           // FFTW wisdom file; "": $CACHE_DIRECTORY/fftwf.wisdom under systemd, else none; "off"
  uint32_t threads = 0;             // CPU backend: threads a fir_bank stage splits its channels over (0: one per core less one, at least 1)
  uint32_t send_threads = 1;        // threads that build and send a chunk's data packets (the output thread + helpers)
  uint64_t test_cuda_fail_at_chunk = 0;  // test-only fault: a CUDA launch fails on this chunk (1-based)
  // CUDA: the devices a CUDA stage's channels are split over, in contiguous ranges (a device may
  // be listed twice). Empty: the default device alone. gpus_auto: every device the host has.
  std::vector<int> gpus;
  bool gpus_auto = false;
  bool operator==(const PipelineSettings&) const = default;
};

struct MetricsSettings {
  bool enabled = false;           // off by default: vigild opens no listening socket
  Endpoint listen{"127.0.0.1", 9102};
  bool allow_non_loopback = false;  // must be set to listen anywhere but loopback
  bool operator==(const MetricsSettings&) const = default;
};

// `health:`: the SoC's temperatures and clock throttling, read from sysfs off the real-time threads
// (docs/JETSON.md, "Field health"); alarms as `health` events.
struct HealthSettings {
  bool enabled = true;
  std::string sysfs_root = "/sys";   // tests point it at a tree of their own
  double interval_s = 1;             // between readings (1 .. 3600 s)
  double temperature_alarm_c = 90;   // a thermal zone at or above raises an alarm ...
  double temperature_clear_c = 85;   // ... that clears below this
  bool throttle_alarm = true;        // a throttled clock raises an alarm
  // What a clock's cap is compared with: hardware (its highest frequency: any cap below it counts,
  // a power mode's included), start (its cap when vigild started), auto (hardware on a Jetson,
  // else start).
  std::string throttle_reference = "auto";
  double throttle_clear_s = 10;      // not throttled this long before its alarm clears
  bool operator==(const HealthSettings&) const = default;
};

// `record:`: the raw input chunks to SigMF files in `directory`.
struct RecordSettings {
  bool enabled = false;
  std::string directory;
  std::string prefix = "vigil";      // files are PREFIX-YYYYMMDDTHHMMSSZ-NNNN.sigmf-{data,meta}
  double max_file_mib = 1024;        // start a new file before one would pass this size
  double max_file_s = 3600;          // ... or this much signal time (0: no limit)
  double max_total_mib = 10240;      // every PREFIX-* recording in the directory together
  std::string when_full = "delete_oldest";  // delete_oldest | stop: what the total cap does
  uint32_t buffer_chunks = 64;       // chunks that may wait for the disk before some are dropped
  bool operator==(const RecordSettings&) const = default;
};

struct Settings {
  std::string path;                 // the file these came from
  std::string config_sha256;        // SHA-256 of the file's bytes (written into recordings)
  std::string source_kind = "synthetic";  // "synthetic" | "file" | "alsa" | "vita49" | "iio"
  SyntheticSpec synthetic;  // for "file" and "alsa": rate, channels, format and chunk size as expected
  FileSourceSpec file;
  AlsaSpec alsa;
  Vita49SourceSpec vita49;
  IioSourceSpec iio;
  PipelineSettings pipeline;
  std::vector<StageSettings> stages;
  std::vector<DataOutputSettings> data_outputs;
  std::vector<EventOutputSettings> event_outputs;
  std::vector<FleetOutputSettings> fleet_outputs;
  MetricsSettings metrics;
  RecordSettings record;
  HealthSettings health;
  bool operator==(const Settings&) const = default;
};

// Most devices pipeline.gpus may list.
constexpr size_t kMaxGpus = 64;

// Largest pool the loader accepts, in bytes (chunk bytes x pool_chunks).
constexpr uint64_t kMaxPoolBytes = uint64_t(1) << 30;

}  // namespace vigil
