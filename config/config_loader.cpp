// YAML -> Settings. Every check reports at the node it concerns (yaml-cpp marks are 0-based).
#include "config/config_loader.hpp"

#include "config/ae_geometry_loader.hpp"
#include "config/yaml_node_ref.hpp"

#include "acquisition/sha256.hpp"
#include "core/stream_format.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <vector>
#include <sstream>

namespace vigil {
namespace {

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

template <typename T>
std::string num_str(T v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// "must be 1..65535"; a bound that only excludes a limit (a frequency above 0, below the Nyquist
// frequency: 1e-9 and nyquist * (1 - 1e-9) in the calls) reads as "above 0" / "below 25600".
template <typename T>
std::string range_str(T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool above_zero = lo > 0 && lo <= T(1e-9);
    const bool below = std::stod(num_str(hi)) > double(hi);
    if (above_zero || below)
      return (above_zero ? std::string("above 0") : "at least " + num_str(lo)) + " and " +
             (below ? "below " : "at most ") + num_str(hi);
  }
  return num_str(lo) + ".." + num_str(hi);
}

class Reader {
 public:
  std::vector<ConfigError> errors;
  std::vector<ConfigError> warnings;
  std::vector<HostPlace> hosts;

  void host(const YAML::Node& value, const std::string& where, const std::string& name,
            HostPlace::Use use = HostPlace::Use::kDestination) {
    const YAML::Mark m = value.Mark();
    hosts.push_back({name, where, m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1, use});
  }

  void error(const YAML::Mark& m, std::string msg) {
    errors.push_back({m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1, std::move(msg)});
  }

  // Reports every key of `map` not in `allowed`, at the key, with the nearest valid key.
  // hint: for a key not allowed here, what to say instead of the nearest allowed key ("" if nothing).
  void check_keys(const YAML::Node& map, const std::string& where, const std::vector<std::string>& allowed,
                  const std::function<std::string(const std::string&)>& hint = {}) {
    MappingKeys seen;
    for (const auto& kv : map) {
      const YAML::Mark at = kv.first.Mark();
      if (!kv.first.IsScalar()) {
        error(at, "a key in " + where + " must be a plain name, not " + describe(kv.first));
        continue;
      }
      const std::string key = kv.first.Scalar();
      if (const std::string twice = seen.repeat(key, at.line, at.column, where); !twice.empty()) error(at, twice);
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string msg = "unknown key '" + key + "' in " + where;
      const std::string why = hint ? hint(key) : std::string();
      const std::string near = why.empty() ? nearest_key(key, allowed) : std::string();
      if (!why.empty()) msg += " (" + why + ")";
      else if (!near.empty()) msg += " (did you mean '" + near + "'?)";
      error(kv.first.Mark(), msg);
    }
  }

  bool expect_map(const YAML::Node& n, const std::string& where) {
    if (n.IsMap()) return true;
    error(n.Mark(), where + ": expected a mapping, got " + describe(n));
    return false;
  }

  // Reads map[key] as a number in [lo, hi] into out (left alone when absent and not required).
  template <typename T>
  bool number(const YAML::Node& map, const std::string& where, const char* key, T lo, T hi, T& out,
              bool required = false) {
    const YAML::Node n = map[key];
    if (!n) {
      if (required) error(map.Mark(), where + ": missing required key '" + key + "'");
      return false;
    }
    T v{};
    if (!n.IsScalar() || !YAML::convert<T>::decode(n, v) || (std::is_floating_point_v<T> && !std::isfinite(double(v)))) {
      error(n.Mark(), where + "." + key + ": expected " +
                          (std::is_integral_v<T> ? "an integer" : "a number") + ", got " + describe(n));
      return false;
    }
    if (v < lo || v > hi) {
      error(n.Mark(), where + "." + key + " must be " + range_str(lo, hi) + ", got " + n.Scalar());
      return false;
    }
    out = v;
    return true;
  }

  bool boolean(const YAML::Node& map, const std::string& where, const char* key, bool& out) {
    const YAML::Node n = map[key];
    if (!n) return false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, out)) {
      error(n.Mark(), where + "." + key + ": expected true or false, got " + describe(n));
      return false;
    }
    return true;
  }

  bool string(const YAML::Node& map, const std::string& where, const char* key, std::string& out,
              bool required = false) {
    const YAML::Node n = map[key];
    if (!n) {
      if (required) error(map.Mark(), where + ": missing required key '" + key + "'");
      return false;
    }
    if (!n.IsScalar() || n.Scalar().empty()) {
      error(n.Mark(), where + "." + key + ": expected a non-empty string, got " + describe(n));
      return false;
    }
    out = n.Scalar();
    return true;
  }

  // A string that must be one of `choices`.
  bool choice(const YAML::Node& map, const std::string& where, const char* key,
              const std::vector<std::string>& choices, std::string& out, bool required = false) {
    std::string v;
    if (!string(map, where, key, v, required)) return false;
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
      std::string msg = where + "." + key + " must be one of " + list + ", got '" + v + "'";
      const std::string near = nearest_key(v, choices);
      if (!near.empty()) msg += " (did you mean '" + near + "'?)";
      error(map[key].Mark(), msg);
      return false;
    }
    out = v;
    return true;
  }

  bool number_list(const YAML::Node& map, const std::string& where, const char* key, double lo, double hi,
                   std::vector<double>& out) {
    const YAML::Node n = map[key];
    if (!n) return false;
    if (!n.IsSequence()) {
      error(n.Mark(), where + "." + key + ": expected a list of numbers, got " + describe(n));
      return false;
    }
    out.clear();
    for (const auto& item : n) {
      double v = 0;
      if (!item.IsScalar() || !YAML::convert<double>::decode(item, v) || !std::isfinite(v)) {
        error(item.Mark(), where + "." + key + ": expected a number, got " + describe(item));
        return false;
      }
      if (v < lo || v > hi) {
        error(item.Mark(), where + "." + key + " entries must be " + range_str(lo, hi) +
                               ", got " + item.Scalar());
        return false;
      }
      if (!out.empty() && v < out.back()) {
        error(item.Mark(), where + "." + key + " must be in ascending order");
        return false;
      }
      out.push_back(v);
    }
    return true;
  }
};

// ---------------------------------------------------------------------------------------------
void read_signal(Reader& r, const YAML::Node& n, const std::string& where, double nyquist, ChannelSignal& s) {
  if (!r.expect_map(n, where)) return;
  r.check_keys(n, where, {"sines", "noise_rms", "impulses", "bursts"});
  if (const YAML::Node sines = n["sines"]) {
    if (!sines.IsSequence()) {
      r.error(sines.Mark(), where + ".sines: expected a list, got " + describe(sines));
    } else {
      for (size_t i = 0; i < sines.size(); ++i) {
        const std::string w = where + ".sines[" + std::to_string(i) + "]";
        const YAML::Node sn = sines[i];
        if (!r.expect_map(sn, w)) continue;
        r.check_keys(sn, w, {"freq_hz", "amplitude", "phase_rad"});
        SineSpec spec;
        r.number(sn, w, "freq_hz", 0.0, nyquist, spec.freq_hz, true);
        r.number(sn, w, "amplitude", -1e6, 1e6, spec.amplitude, true);
        r.number(sn, w, "phase_rad", -1e3, 1e3, spec.phase_rad);
        s.sines.push_back(spec);
      }
    }
  }
  r.number(n, where, "noise_rms", 0.0, 1e6, s.noise_rms);
  if (const YAML::Node im = n["impulses"]) {
    const std::string w = where + ".impulses";
    if (r.expect_map(im, w)) {
      r.check_keys(im, w, {"amplitude", "period_s", "offset_s", "times_s"});
      r.number(im, w, "amplitude", -1e6, 1e6, s.impulses.amplitude, true);
      r.number(im, w, "period_s", 0.0, 1e9, s.impulses.period_s);
      r.number(im, w, "offset_s", 0.0, 1e9, s.impulses.offset_s);
      r.number_list(im, w, "times_s", 0.0, 1e9, s.impulses.times_s);
    }
  }
  if (const YAML::Node b = n["bursts"]) {
    const std::string w = where + ".bursts";
    if (r.expect_map(b, w)) {
      r.check_keys(b, w, {"amplitude", "freq_hz", "rise_s", "decay_s", "rate_hz", "times_s"});
      r.number(b, w, "amplitude", -1e6, 1e6, s.bursts.amplitude, true);
      r.number(b, w, "freq_hz", 0.0, nyquist, s.bursts.freq_hz, true);
      r.number(b, w, "rise_s", 0.0, 1e3, s.bursts.rise_s);
      r.number(b, w, "decay_s", 1e-9, 1e3, s.bursts.decay_s);
      r.number(b, w, "rate_hz", 0.0, 1e6, s.bursts.rate_hz);
      r.number_list(b, w, "times_s", 0.0, 1e9, s.bursts.times_s);
    }
  }
}

// Each kind's keys (of sources, stages, outputs): a key that belongs to another kind is named as
// such ("it applies to kind: alsa, not kind: synthetic"), not matched to a near key of this one.
using KindKeys = std::map<std::string, std::vector<std::string>>;

const KindKeys kSourceKeys = {
    {"synthetic", {"kind", "rate_hz", "channels", "format", "chunk_frames", "seed", "rate_factor", "duration_s", "loop_s",
                   "copy_threads", "signals", "ae_sources"}},
    {"file", {"kind", "path", "chunk_frames", "rate_factor", "loop"}},
    {"alsa", {"kind", "device", "rate_hz", "channels", "format", "period_frames", "buffer_frames", "strict",
              "duration_s"}},
    {"iio", {"kind", "uri", "device", "channels", "sample_rate_hz", "chunk_frames", "kernel_buffers"}},
    {"vita49", {"kind", "listen", "interface", "streams", "channels", "rate_hz", "format", "chunk_frames", "max_wait_s",
                "start_timeout_s"}},
};

const KindKeys kStageKeys = {
    {"fir_bank", {"name", "kind", "input", "optional", "taps", "window", "kaiser_beta", "bands", "max_latency_frames",
                  "crossover_hz", "band_names", "fft_planning", "form"}},
    {"wavelet_denoise", {"name", "kind", "input", "optional", "wavelet", "levels", "mode", "noise", "threshold_scale",
                         "window"}},
    {"band_rms", {"name", "kind", "input", "optional", "window_s", "threshold", "clear_threshold"}},
    {"ae_hits", {"name", "kind", "input", "optional", "threshold_db", "floating_margin_db", "floating_window_s", "hdt_us",
                 "pdt_us", "hlt_us", "max_duration_ms", "full_scale_v", "preamp_gain_db", "level_interval_s",
                 "waveform"}},
    {"vibration", {"name", "kind", "input", "optional", "window_s", "hop_s", "full_scale_v", "sensitivity_mv_per_g",
                   "sensitivity_mv_per_ms2", "velocity", "iso_20816", "zones_mm_s", "envelope", "rules"}},
    {"ae_locate", {"name", "kind", "input", "geometry", "cluster_alarm"}},
};

const KindKeys kOutputKeys = {
    {"vita49", {"kind", "stream", "destination", "jumbo", "context_interval_s", "decimation", "framing",
                "multicast_interface", "multicast_ttl", "multicast_loop"}},
    {"events", {"kind", "destination", "status_interval_s", "framing", "jumbo", "multicast_interface",
                "multicast_ttl", "multicast_loop"}},
    {"nats", {"kind", "servers", "rig", "subject_prefix", "stream", "types", "ca", "cert", "key", "creds", "user",
              "password", "status_interval_s", "ack_timeout_s", "queue_events", "max_in_flight", "bucket"}},
};

// Keys a kind lacks for a reason better said than "it applies to kind: ...": (kind, key) -> why.
using KeyHints = std::map<std::pair<std::string, std::string>, std::string>;

const KeyHints kSourceKeyHints = {
    {{"alsa", "chunk_frames"}, "an ALSA source's chunk is one period: set period_frames"},
    {{"file", "rate_hz"}, "a recording brings its own rate, channels and format"},
    {{"file", "channels"}, "a recording brings its own rate, channels and format"},
    {{"file", "format"}, "a recording brings its own rate, channels and format"},
    {{"iio", "rate_hz"}, "an IIO source takes sample_rate_hz (written to the device's sampling_frequency)"},
    {{"iio", "format"}, "an IIO device's scan elements give the format"},
    {{"vita49", "format"}, "the streams' context packets give the format; give it only for senders without them"},
};

std::string other_kind_hint(const KindKeys& table, const KeyHints& hints, const std::string& kind,
                            const std::string& key) {
  if (const auto it = hints.find({kind, key}); it != hints.end()) return it->second;
  std::string kinds;
  for (const auto& [other, keys] : table)
    if (other != kind && std::find(keys.begin(), keys.end(), key) != keys.end())
      kinds += (kinds.empty() ? "kind: " : " and kind: ") + other;
  return kinds.empty() ? std::string() : "it applies to " + kinds + ", not kind: " + kind;
}

void check_kind_keys(Reader& r, const YAML::Node& n, const std::string& where, const KindKeys& table,
                     const std::string& kind, const KeyHints& hints = {}) {
  r.check_keys(n, where, table.at(kind),
               [&](const std::string& key) { return other_kind_hint(table, hints, kind, key); });
}

// A VITA 49 source: where it listens, which streams are its channels, and the rate the stages are
// designed for (the context packets must agree; their payload format gives the sample format).
void read_vita49_source(Reader& r, const YAML::Node& n, Settings& s) {
  const std::string where = "source";
  check_kind_keys(r, n, where, kSourceKeys, "vita49", kSourceKeyHints);
  Vita49SourceSpec& v = s.vita49;
  std::string listen;
  if (r.string(n, where, "listen", listen, true)) {
    Endpoint ep;
    std::string why;
    if (!parse_endpoint(listen, ep, why)) r.error(n["listen"].Mark(), where + ".listen: " + why);
    v.listen_host = ep.host;
    v.listen_port = ep.port;
    r.host(n["listen"], where + ".listen", ep.host, is_multicast_address(ep.host) ? HostPlace::Use::kDestination
                                                                                  : HostPlace::Use::kListen);
  }
  if (r.string(n, where, "interface", v.interface) && !is_multicast_address(v.listen_host))
    r.error(n["interface"].Mark(), where + ".interface: applies to a multicast group (224.0.0.0/4 or ff00::/8), not " +
                                       v.listen_host);
  if (const YAML::Node ids = n["streams"]) {
    if (!ids.IsSequence() || ids.size() == 0 || ids.size() > kMaxChannels) {
      r.error(ids.Mark(), where + ".streams: expected a list of 1.." + std::to_string(kMaxChannels) +
                              " stream ids (0x01000000 or 16777216), got " + describe(ids));
    } else {
      for (size_t i = 0; i < ids.size(); ++i) {
        const std::string text = ids[i].IsScalar() ? ids[i].Scalar() : std::string();
        char* end = nullptr;
        errno = 0;
        const unsigned long long id = text.empty() ? 0 : std::strtoull(text.c_str(), &end, 0);
        if (text.empty() || !end || *end || errno || id > 0xFFFFFFFFull || text[0] == '-') {
          r.error(ids[i].Mark(), where + ".streams[" + std::to_string(i) + "]: expected a 32-bit stream id, got " +
                                     describe(ids[i]));
          continue;
        }
        if (std::find(v.streams.begin(), v.streams.end(), uint32_t(id)) != v.streams.end())
          r.error(ids[i].Mark(), where + ".streams[" + std::to_string(i) + "]: stream " + text + " is listed twice");
        v.streams.push_back(uint32_t(id));
      }
    }
    if (n["channels"])
      r.error(n["channels"].Mark(), where + ".channels: the streams list gives the channels (one a stream); give one "
                                            "or the other");
  } else {
    r.number<uint32_t>(n, where, "channels", 1, kMaxChannels, v.channels);
  }
  r.number(n, where, "rate_hz", 1.0, 1e9, v.rate_hz, true);
  std::string fmt;
  if (r.choice(n, where, "format", {"int16", "int32", "float32"}, fmt)) v.format = *parse_sample_format(fmt);
  r.number<uint32_t>(n, where, "chunk_frames", 1, 1u << 20, v.chunk_frames);
  r.number(n, where, "max_wait_s", 0.001, 10.0, v.max_wait_s);
  r.number(n, where, "start_timeout_s", 0.1, 3600.0, v.start_timeout_s);
  SyntheticSpec& sp = s.synthetic;  // what the stages and the pool are checked against
  sp.rate_hz = v.rate_hz;
  sp.channels = v.streams.empty() ? v.channels : uint32_t(v.streams.size());
  sp.format = v.format.value_or(SampleFormat::kInt32);  // the widest a stream may carry
  sp.chunk_frames = v.chunk_frames;
  sp.rate_factor = 1;
}

// An IIO source: the device and its channels, and the rate the stages are designed for (written
// to the device, read back and checked when it opens).
void read_iio_source(Reader& r, const YAML::Node& n, Settings& s) {
  const std::string where = "source";
  check_kind_keys(r, n, where, kSourceKeys, "iio", kSourceKeyHints);
  if (!VIGIL_HAVE_IIO)
    r.error(n["kind"].Mark(), "source.kind: this vigild was built without libiio (VIGIL_IIO=OFF or no libiio-dev)");
  IioSourceSpec& io = s.iio;
  if (r.string(n, where, "uri", io.uri) && io.uri != "local:" && io.uri.rfind("ip:", 0) != 0 &&
      io.uri.rfind("usb:", 0) != 0)
    r.error(n["uri"].Mark(), where + ".uri: expected local:, ip:HOST or usb:[BUS.DEV.INTF], got '" + io.uri + "'");
  r.string(n, where, "device", io.device, true);
  const YAML::Node ch = n["channels"];
  if (!ch) {
    r.error(n.Mark(), where + ": missing required key 'channels' (the channel ids to capture: [voltage0, voltage1])");
  } else if (!ch.IsSequence() || ch.size() == 0 || ch.size() > kMaxChannels) {
    r.error(ch.Mark(), where + ".channels: expected a list of 1.." + std::to_string(kMaxChannels) +
                           " channel ids ([voltage0, voltage1]), got " + describe(ch));
  } else {
    for (size_t i = 0; i < ch.size(); ++i) {
      const std::string id = ch[i].IsScalar() ? ch[i].Scalar() : std::string();
      if (id.empty() || id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
        r.error(ch[i].Mark(), where + ".channels[" + std::to_string(i) + "]: expected a channel id (voltage0), got " +
                                  describe(ch[i]));
      else if (std::find(io.channels.begin(), io.channels.end(), id) != io.channels.end())
        r.error(ch[i].Mark(), where + ".channels[" + std::to_string(i) + "]: " + id + " is listed twice");
      else
        io.channels.push_back(id);
    }
  }
  r.number(n, where, "sample_rate_hz", 1.0, 1e9, io.sample_rate_hz, true);
  r.number<uint32_t>(n, where, "chunk_frames", 1, 1u << 20, io.chunk_frames);
  r.number<uint32_t>(n, where, "kernel_buffers", 1, 64, io.kernel_buffers);
  SyntheticSpec& sp = s.synthetic;  // what the stages and the pool are checked against
  sp.rate_hz = io.sample_rate_hz;
  sp.channels = uint32_t(std::max<size_t>(1, io.channels.size()));
  sp.format = SampleFormat::kInt32;  // the wider of the two an IIO channel may arrive as
  sp.chunk_frames = io.chunk_frames;
  sp.rate_factor = 1;
}

std::optional<AeGeometryFile> read_geometry(Reader& r, const YAML::Node& parent, const std::string& where,
                                            const std::string& needs, std::string& file);
void read_ae_sources(Reader& r, const YAML::Node& n, double nyquist, uint32_t channels, SyntheticSpec& sp);

void read_source(Reader& r, const YAML::Node& n, Settings& s) {
  const std::string where = "source";
  if (!r.expect_map(n, where)) return;
  r.choice(n, where, "kind", {"synthetic", "file", "alsa", "vita49", "iio"}, s.source_kind);
  SyntheticSpec& sp = s.synthetic;
  if (s.source_kind == "vita49") {
    read_vita49_source(r, n, s);
    return;
  }
  if (s.source_kind == "iio") {
    read_iio_source(r, n, s);
    return;
  }
  if (s.source_kind == "alsa") {
    check_kind_keys(r, n, where, kSourceKeys, "alsa", kSourceKeyHints);
    if (!VIGIL_HAVE_ALSA)
      r.error(n["kind"].Mark(), "source.kind: this vigild was built without ALSA (VIGIL_ALSA=OFF or no libasound)");
    AlsaSpec& a = s.alsa;
    r.string(n, where, "device", a.device);
    r.number(n, where, "rate_hz", 1.0, 10e6, a.rate_hz);
    r.number<uint32_t>(n, where, "channels", 1, kMaxChannels, a.channels);
    std::string fmt;
    if (r.choice(n, where, "format", {"S16_LE", "S24_3LE", "S32_LE", "FLOAT_LE"}, fmt)) a.format = *parse_alsa_format(fmt);
    r.number<uint32_t>(n, where, "period_frames", 16, 1u << 20, a.period_frames);
    a.buffer_frames = std::max(a.buffer_frames, 2 * a.period_frames);
    if (r.number<uint32_t>(n, where, "buffer_frames", 32, 1u << 24, a.buffer_frames) && a.buffer_frames < 2 * a.period_frames)
      r.error(n["buffer_frames"].Mark(), "source.buffer_frames must hold at least 2 periods (" +
                                             std::to_string(2 * a.period_frames) + "), got " + n["buffer_frames"].Scalar());
    r.boolean(n, where, "strict", a.strict);
    r.number(n, where, "duration_s", 0.0, 1e9, a.duration_s);
    // What the graph expects (the device may adapt the rate and period: the graph follows it).
    sp.rate_hz = a.rate_hz;
    sp.channels = a.channels;
    sp.format = a.format == AlsaFormat::kS16Le ? SampleFormat::kInt16
                : a.format == AlsaFormat::kFloatLe ? SampleFormat::kFloat32 : SampleFormat::kInt32;
    sp.chunk_frames = a.period_frames;
    sp.rate_factor = 1;
    return;
  }
  if (s.source_kind == "file") {
    // A recording brings its own rate, channels and format.
    check_kind_keys(r, n, where, kSourceKeys, "file", kSourceKeyHints);
    r.number<uint32_t>(n, where, "chunk_frames", 1, 1u << 20, sp.chunk_frames);
    r.number(n, where, "rate_factor", 0.0, 10000.0, sp.rate_factor);
    r.boolean(n, where, "loop", s.file.loop);
    if (!r.string(n, where, "path", s.file.path, true)) return;
    s.file.chunk_frames = sp.chunk_frames;
    s.file.rate_factor = sp.rate_factor;
    try {
      const RecordingInfo info = probe_recording(s.file.path);
      sp.rate_hz = info.rate_hz;
      sp.channels = info.channels;
      sp.format = info.format;
      const YAML::Mark m = n["path"].Mark();
      for (const std::string& cut : info.cuts)
        r.warnings.push_back({m.line + 1, m.column + 1, "source.path: " + cut});
    } catch (const std::exception& e) {
      r.error(n["path"].Mark(), "source.path: " + std::string(e.what()));
    }
    return;
  }
  check_kind_keys(r, n, where, kSourceKeys, "synthetic", kSourceKeyHints);
  r.number(n, where, "rate_hz", 1.0, 10e6, sp.rate_hz);
  r.number<uint32_t>(n, where, "channels", 1, kMaxChannels, sp.channels);
  std::string fmt;
  if (r.choice(n, where, "format", {"int16", "int32", "float32"}, fmt)) sp.format = *parse_sample_format(fmt);
  r.number<uint32_t>(n, where, "chunk_frames", 1, 1u << 20, sp.chunk_frames);
  r.number<uint64_t>(n, where, "seed", 0, std::numeric_limits<uint64_t>::max(), sp.seed);
  r.number(n, where, "rate_factor", 0.0, 10000.0, sp.rate_factor);
  r.number(n, where, "duration_s", 0.0, 1e9, sp.duration_s);
  r.number(n, where, "loop_s", 0.0, 3600.0, sp.loop_s);
  r.number<uint32_t>(n, where, "copy_threads", 0, 64, sp.copy_threads);
  if (sp.loop_s > 0 && uint64_t(sp.loop_s * sp.rate_hz) * sp.channels * bytes_per_sample(sp.format) > (uint64_t(1) << 30))
    r.error(n["loop_s"].Mark(), "source.loop_s: " + std::to_string(sp.loop_s) + " s of all channels would take more "
                                "than 1 GiB; give a shorter loop");
  sp.signals.clear();
  if (const YAML::Node sig = n["signals"]) {
    if (!sig.IsSequence()) {
      r.error(sig.Mark(), "source.signals: expected a list (one entry per channel, or one for all), got " +
                              describe(sig));
    } else {
      for (size_t i = 0; i < sig.size(); ++i) {
        ChannelSignal cs;
        read_signal(r, sig[i], "source.signals[" + std::to_string(i) + "]", sp.rate_hz / 2.0, cs);
        sp.signals.push_back(std::move(cs));
      }
      if (sig.size() != 1 && sig.size() != sp.channels)
        r.error(sig.Mark(), "source.signals: list " + std::to_string(sig.size()) +
                                " entries for " + std::to_string(sp.channels) +
                                " channels (give one per channel, or one for all)");
    }
  }
  if (const YAML::Node a = n["ae_sources"]) read_ae_sources(r, a, sp.rate_hz / 2.0, sp.channels, sp);
}

// source.ae_sources: AE sources planted on a structure (a synthetic source's; issue 52).
void read_ae_sources(Reader& r, const YAML::Node& n, double nyquist, uint32_t channels, SyntheticSpec& sp) {
  const std::string where = "source.ae_sources";
  if (!r.expect_map(n, where)) return;
  r.check_keys(n, where, {"geometry", "attenuation_db_m", "spreading", "reference_m", "burst", "sources"});
  PlantedAeSpec p;
  std::string file;
  if (const auto got = read_geometry(r, n, where, "planted sources need", file)) {
    for (const AePoint& s : got->geometry.sensors) p.sensors.push_back({s.x, s.y, s.z});
    p.velocity_m_s = got->geometry.velocity_m_s;
    if (p.sensors.size() != channels)
      r.error(n["geometry"].Mark(), where + ".geometry: " + std::to_string(p.sensors.size()) + " sensors for " +
                                        std::to_string(channels) + " channels (one sensor a channel, in channel order)");
  }
  r.number(n, where, "attenuation_db_m", 0.0, 1e4, p.attenuation_db_m);
  r.number(n, where, "reference_m", 1e-6, 1e3, p.reference_m);
  std::string spreading;
  if (r.choice(n, where, "spreading", {"none", "cylindrical", "spherical"}, spreading))
    p.spreading = spreading == "none" ? AeSpreading::kNone
                  : spreading == "spherical" ? AeSpreading::kSpherical : AeSpreading::kCylindrical;
  if (const YAML::Node b = n["burst"]; b && r.expect_map(b, where + ".burst")) {
    const std::string w = where + ".burst";
    r.check_keys(b, w, {"freq_hz", "rise_s", "decay_s"});
    r.number(b, w, "freq_hz", 0.0, nyquist, p.freq_hz);
    r.number(b, w, "rise_s", 0.0, 1.0, p.rise_s);
    r.number(b, w, "decay_s", 1e-9, 1.0, p.decay_s);
  }
  const YAML::Node src = n["sources"];
  if (!src || !src.IsSequence() || src.size() == 0) {
    r.error((src ? src : n).Mark(), where + ".sources: expected a list of sources ({x_m, y_m, amplitude, rate_hz "
                                            "and/or times_s}), got " + (src ? describe(src) : std::string("none")));
  } else {
    for (size_t i = 0; i < src.size(); ++i) {
      const std::string w = where + ".sources[" + std::to_string(i) + "]";
      if (!r.expect_map(src[i], w)) continue;
      r.check_keys(src[i], w, {"x_m", "y_m", "z_m", "amplitude", "rate_hz", "times_s"});
      PlantedAeSource s;
      r.number(src[i], w, "x_m", -1e6, 1e6, s.x_m, true);
      r.number(src[i], w, "y_m", -1e6, 1e6, s.y_m);
      r.number(src[i], w, "z_m", -1e6, 1e6, s.z_m);
      r.number(src[i], w, "amplitude", -1e6, 1e6, s.amplitude, true);
      r.number(src[i], w, "rate_hz", 0.0, 1e5, s.rate_hz);
      r.number_list(src[i], w, "times_s", 0.0, 1e9, s.times_s);
      if (!std::is_sorted(s.times_s.begin(), s.times_s.end()))
        r.error(src[i]["times_s"].Mark(), w + ".times_s must be in ascending order");
      if (s.rate_hz == 0 && s.times_s.empty())
        r.error(src[i].Mark(), w + ": emits never: give rate_hz (a mean rate) or times_s");
      p.sources.push_back(std::move(s));
    }
  }
  sp.ae_sources = std::move(p);
}

void read_pipeline(Reader& r, const YAML::Node& n, Settings& s) {
  const std::string where = "pipeline";
  if (!r.expect_map(n, where)) return;
  r.check_keys(n, where, {"backend", "pool_chunks", "output_slots", "deadline_budget_ms", "test_stall_after_s",
                          "overload", "overload_restore_s", "test_optional_cost_ms", "realtime_priority", "capture_cpu",
                          "mlockall", "memory", "test_cuda_fail_at_chunk", "test_chunk_cost_ms",
                          "test_chunk_cost_for_s", "threads", "busy_poll", "gpu_resident", "fft_wisdom",
                          "send_threads", "upload_in_parts", "cuda_graphs", "gpu_keep_warm", "gpus"});
  if (const YAML::Node g = n["gpus"]) {
    if (g.IsScalar() && g.Scalar() == "auto") {
      s.pipeline.gpus_auto = true;
    } else if (!g.IsSequence() || g.size() == 0 || g.size() > kMaxGpus) {
      r.error(g.Mark(), where + ".gpus: expected auto or a list of 1.." + std::to_string(kMaxGpus) +
                            " device numbers ([0, 1]), got " + describe(g));
    } else {
      for (size_t i = 0; i < g.size(); ++i) {
        int d = -1;
        if (!g[i].IsScalar() || !YAML::convert<int>::decode(g[i], d) || d < 0 || d > 1023) {
          r.error(g[i].Mark(), where + ".gpus[" + std::to_string(i) + "]: expected a device number (0, 1, ...), got " +
                                   describe(g[i]));
          continue;
        }
        s.pipeline.gpus.push_back(d);
      }
    }
  }
  r.string(n, where, "fft_wisdom", s.pipeline.fft_wisdom);
  r.boolean(n, where, "busy_poll", s.pipeline.busy_poll);
  r.boolean(n, where, "gpu_resident", s.pipeline.gpu_resident);
  r.boolean(n, where, "upload_in_parts", s.pipeline.upload_in_parts);
  r.choice(n, where, "cuda_graphs", {"all", "fir_bank", "off"}, s.pipeline.cuda_graphs);
  r.choice(n, where, "gpu_keep_warm", {"auto", "true", "false"}, s.pipeline.gpu_keep_warm);
  r.number<uint32_t>(n, where, "threads", 0, 256, s.pipeline.threads);
  r.number<uint32_t>(n, where, "send_threads", 1, 64, s.pipeline.send_threads);
  r.number(n, where, "test_chunk_cost_ms", 0.0, 10000.0, s.pipeline.test_chunk_cost_ms);
  r.number(n, where, "test_chunk_cost_for_s", 0.0, 1e9, s.pipeline.test_chunk_cost_for_s);
  r.choice(n, where, "memory", {"auto", "copy", "mapped"}, s.pipeline.memory);
  r.number<uint64_t>(n, where, "test_cuda_fail_at_chunk", 0, uint64_t(1) << 62, s.pipeline.test_cuda_fail_at_chunk);
  r.number(n, where, "realtime_priority", 0, 99, s.pipeline.realtime_priority);
  r.number(n, where, "capture_cpu", -1, 4095, s.pipeline.capture_cpu);
  r.boolean(n, where, "mlockall", s.pipeline.mlockall);
  r.choice(n, where, "overload", {"report", "shed"}, s.pipeline.overload);
  r.number(n, where, "overload_restore_s", 0.1, 86400.0, s.pipeline.overload_restore_s);
  r.number(n, where, "test_optional_cost_ms", 0.0, 10000.0, s.pipeline.test_optional_cost_ms);
  r.choice(n, where, "backend", {"auto", "cpu", "cuda"}, s.pipeline.backend);
  r.number<uint32_t>(n, where, "pool_chunks", 2, 65536, s.pipeline.pool_chunks);
  r.number<uint32_t>(n, where, "output_slots", 2, 65536, s.pipeline.output_slots);
  r.number(n, where, "deadline_budget_ms", 0.0, 3.6e6, s.pipeline.deadline_budget_ms);
  r.number(n, where, "test_stall_after_s", 0.0, 1e9, s.pipeline.test_stall_after_s);
}

void read_band(Reader& r, const YAML::Node& n, const std::string& where, double nyquist, BandSettings& b) {
  if (!r.expect_map(n, where)) return;
  r.check_keys(n, where, {"name", "type", "cutoff_hz", "low_hz", "high_hz"});
  r.string(n, where, "name", b.name, true);
  std::string type;
  if (!r.choice(n, where, "type", {"lowpass", "highpass", "bandpass", "bandstop"}, type, true)) return;
  b.type = *parse_filter_type(type);
  if (b.type == FilterType::kLowpass || b.type == FilterType::kHighpass) {
    if (n["low_hz"]) r.error(n["low_hz"].Mark(), where + ".low_hz: a " + type + " band takes cutoff_hz");
    if (n["high_hz"]) r.error(n["high_hz"].Mark(), where + ".high_hz: a " + type + " band takes cutoff_hz");
    r.number(n, where, "cutoff_hz", 1e-9, nyquist * (1 - 1e-9), b.f1_hz, true);
  } else {
    if (n["cutoff_hz"]) r.error(n["cutoff_hz"].Mark(), where + ".cutoff_hz: a " + type + " band takes low_hz and high_hz");
    const bool lo = r.number(n, where, "low_hz", 1e-9, nyquist * (1 - 1e-9), b.f1_hz, true);
    const bool hi = r.number(n, where, "high_hz", 1e-9, nyquist * (1 - 1e-9), b.f2_hz, true);
    if (lo && hi && !(b.f2_hz > b.f1_hz))
      r.error(n["high_hz"].Mark(), where + ".high_hz must be above low_hz (" + num_str(b.f1_hz) + "), got " +
                                       n["high_hz"].Scalar());
  }
}

// An alarm rule's levels, hysteresis, delays and latching (dsp/alarm_rule.hpp).
void read_alarm_levels(Reader& r, const YAML::Node& n, const std::string& where, AlarmRuleSettings& a) {
  r.number(n, where, "alert", 1e-12, 1e12, a.alert, true);
  if (r.number(n, where, "danger", 0.0, 1e12, a.danger) && a.danger != 0 && a.danger < a.alert)
    r.error(n["danger"].Mark(), where + ".danger must be at least alert (" + num_str(a.alert) + "), got " + n["danger"].Scalar());
  r.number(n, where, "hysteresis", 0.0, 1e12, a.hysteresis);
  r.number(n, where, "on_delay_s", 0.0, 86400.0, a.on_delay_s);
  r.number(n, where, "off_delay_s", 0.0, 86400.0, a.off_delay_s);
  r.boolean(n, where, "latch", a.latch);
}

void read_vibration_rule(Reader& r, const YAML::Node& n, const std::string& where, VibrationRuleSettings& rule) {
  if (!r.expect_map(n, where)) return;
  r.check_keys(n, where, {"name", "metric", "alert", "danger", "hysteresis", "on_delay_s", "off_delay_s", "latch"});
  r.string(n, where, "name", rule.name, true);
  std::vector<std::string> metrics;
  for (size_t m = 0; m < kVibrationMetricCount; ++m) metrics.push_back(to_string(VibrationMetric(m)));
  std::string metric;
  if (r.choice(n, where, "metric", metrics, metric, true)) parse_vibration_metric(metric, rule.metric);
  read_alarm_levels(r, n, where, rule.levels);
}

void read_vibration(Reader& r, const YAML::Node& n, const std::string& where, double nyquist, StageSettings& st) {
  check_kind_keys(r, n, where, kStageKeys, "vibration");
  const size_t errors_before = r.errors.size();
  VibrationStageSettings p;
  VibrationSettings& a = p.analysis;
  r.number(n, where, "window_s", 1e-4, 600.0, a.window_s);
  a.hop_s = a.window_s / 2;
  if (r.number(n, where, "hop_s", 1e-6, 600.0, a.hop_s) && a.hop_s > a.window_s)
    r.error(n["hop_s"].Mark(), where + ".hop_s must not exceed window_s (" + num_str(a.window_s) + "), got " + n["hop_s"].Scalar());
  r.number(n, where, "full_scale_v", 1e-6, 1e3, a.full_scale_v);
  double mv_g = 0, mv_ms2 = 0;
  const bool per_g = r.number(n, where, "sensitivity_mv_per_g", 1e-6, 1e6, mv_g);
  const bool per_ms2 = r.number(n, where, "sensitivity_mv_per_ms2", 1e-6, 1e6, mv_ms2);
  if (per_g && per_ms2)
    r.error(n["sensitivity_mv_per_ms2"].Mark(), where + ": give sensitivity_mv_per_g or sensitivity_mv_per_ms2, not both");
  a.sensitivity_v_per_ms2 = per_g ? mv_g * 1e-3 / 9.80665 : per_ms2 ? mv_ms2 * 1e-3 : 0;
  if ((a.full_scale_v > 0) != (a.sensitivity_v_per_ms2 > 0))
    r.error(n.Mark(), where + ": calibration needs both full_scale_v and a sensitivity (mV/g or mV/(m/s^2))");
  r.boolean(n, where, "velocity", a.velocity);
  if (a.velocity && a.sensitivity_v_per_ms2 <= 0)
    r.error(n["velocity"].Mark(), where + ".velocity: needs full_scale_v and a sensitivity");
  if (const YAML::Node iso = n["iso_20816"]) {
    const std::string w = where + ".iso_20816";
    if (r.expect_map(iso, w)) {
      r.check_keys(iso, w, {"group", "foundation"});
      int group = 2;
      std::string foundation = "rigid";
      r.number(iso, w, "group", 1, 2, group, true);
      r.choice(iso, w, "foundation", {"rigid", "flexible"}, foundation);
      a.zones = iso20816_3_bounds(group, foundation == "flexible");
    }
    if (!a.velocity) r.error(iso.Mark(), w + ": zones grade velocity: set velocity: true");
    if (n["zones_mm_s"]) r.error(n["zones_mm_s"].Mark(), where + ": give iso_20816 or zones_mm_s, not both");
  } else if (n["zones_mm_s"]) {
    std::vector<double> z;
    if (r.number_list(n, where, "zones_mm_s", 1e-6, 1e4, z)) {
      if (z.size() != 3)
        r.error(n["zones_mm_s"].Mark(), where + ".zones_mm_s: expected 3 boundaries (A/B, B/C, C/D), got " + std::to_string(z.size()));
      else
        a.zones = {z[0], z[1], z[2]};
    }
    if (!a.velocity) r.error(n["zones_mm_s"].Mark(), where + ".zones_mm_s: zones grade velocity: set velocity: true");
  }
  if (const YAML::Node e = n["envelope"]) {
    const std::string w = where + ".envelope";
    if (r.expect_map(e, w)) {
      r.check_keys(e, w, {"low_hz", "high_hz", "shaft_hz", "bearing", "defect_hz"});
      a.envelope = true;
      r.number(e, w, "low_hz", 1e-3, nyquist, a.envelope_lo_hz, true);
      if (r.number(e, w, "high_hz", 1e-3, nyquist, a.envelope_hi_hz, true) && a.envelope_hi_hz <= a.envelope_lo_hz)
        r.error(e["high_hz"].Mark(), w + ".high_hz must be above low_hz (" + num_str(a.envelope_lo_hz) + "), got " + e["high_hz"].Scalar());
      if (const YAML::Node b = e["bearing"]) {
        const std::string bw = w + ".bearing";
        double shaft = 0;
        BearingGeometry g;
        if (r.expect_map(b, bw)) {
          r.check_keys(b, bw, {"rollers", "roller_diameter_mm", "pitch_diameter_mm", "contact_angle_deg"});
          r.number<uint32_t>(b, bw, "rollers", 3, 200, g.rollers, true);
          r.number(b, bw, "roller_diameter_mm", 1e-3, 1e4, g.roller_diameter, true);
          if (r.number(b, bw, "pitch_diameter_mm", 1e-3, 1e5, g.pitch_diameter, true) && g.pitch_diameter <= g.roller_diameter)
            r.error(b["pitch_diameter_mm"].Mark(), bw + ".pitch_diameter_mm must exceed roller_diameter_mm");
          r.number(b, bw, "contact_angle_deg", 0.0, 89.0, g.contact_angle_deg);
        }
        if (!r.number(e, w, "shaft_hz", 1e-3, nyquist, shaft, true)) shaft = 0;
        if (shaft > 0 && g.rollers > 0 && g.pitch_diameter > g.roller_diameter) a.defects = bearing_frequencies(g, shaft);
        if (e["defect_hz"]) r.error(e["defect_hz"].Mark(), w + ": give bearing (with shaft_hz) or defect_hz, not both");
      } else if (const YAML::Node d = e["defect_hz"]) {
        const std::string dw = w + ".defect_hz";
        if (r.expect_map(d, dw)) {
          r.check_keys(d, dw, {"bpfo", "bpfi", "bsf", "ftf"});
          r.number(d, dw, "bpfo", 0.0, nyquist, a.defects.bpfo);
          r.number(d, dw, "bpfi", 0.0, nyquist, a.defects.bpfi);
          r.number(d, dw, "bsf", 0.0, nyquist, a.defects.bsf);
          r.number(d, dw, "ftf", 0.0, nyquist, a.defects.ftf);
        }
      } else {
        r.error(e.Mark(), w + ": missing 'bearing' (with shaft_hz) or 'defect_hz'");
      }
    }
  }
  if (const YAML::Node rules = n["rules"]) {
    if (!rules.IsSequence()) {
      r.error(rules.Mark(), where + ".rules: expected a list of rules, got " + describe(rules));
    } else {
      std::set<std::string> names;
      for (size_t i = 0; i < rules.size(); ++i) {
        VibrationRuleSettings rule;
        const std::string w = where + ".rules[" + std::to_string(i) + "]";
        read_vibration_rule(r, rules[i], w, rule);
        if (!rule.name.empty() && !names.insert(rule.name).second)
          r.error(rules[i]["name"].Mark(), w + ".name: rule '" + rule.name + "' is listed twice");
        const bool needs_velocity = rule.metric == VibrationMetric::kVelocityRms;
        const bool needs_envelope = rule.metric >= VibrationMetric::kBpfo;
        if ((needs_velocity && !a.velocity) || (needs_envelope && !a.envelope))
          r.error(rules[i]["metric"] ? rules[i]["metric"].Mark() : rules[i].Mark(),
                  w + ".metric: '" + to_string(rule.metric) + "' is not computed: enable " +
                      (needs_velocity ? "velocity" : "envelope") + " in this stage");
        p.rules.push_back(rule);
      }
    }
  }
  if (r.errors.size() == errors_before) {
    try {  // what depends on the rate (window length, bands against the bin width)
      VibrationAnalyzer check(a, 2 * nyquist);
    } catch (const std::invalid_argument& e) {
      r.error(n.Mark(), where + ": " + e.what());
    }
  }
  st.params = p;
}

void read_denoise(Reader& r, const YAML::Node& n, const std::string& where, StageSettings& st) {
  check_kind_keys(r, n, where, kStageKeys, "wavelet_denoise");
  DenoiseStageSettings p;
  bool ok = true;
  if (r.string(n, where, "wavelet", p.wavelet) && !find_wavelet(p.wavelet)) {
    std::vector<std::string> names = wavelet_names();
    std::string msg = where + ".wavelet: unknown wavelet '" + p.wavelet + "' (haar, db1..db20, sym2..sym20)";
    const std::string near = nearest_key(p.wavelet, names);
    if (!near.empty()) msg += " (did you mean '" + near + "'?)";
    r.error(n["wavelet"].Mark(), msg);
    ok = false;
  }
  const bool levels_ok = !n["levels"] || r.number<unsigned>(n, where, "levels", 0, 20, p.levels);
  ok = ok && levels_ok;
  std::string mode = "soft", noise = "finest";
  if (r.choice(n, where, "mode", {"soft", "hard"}, mode)) p.mode = *parse_threshold_mode(mode);
  if (r.choice(n, where, "noise", {"finest", "per-level"}, noise)) p.noise = *parse_noise_estimate(noise);
  r.number(n, where, "threshold_scale", 0.0, 1e6, p.threshold_scale);
  if (r.number<uint32_t>(n, where, "window", 16, 1u << 20, p.window) && (p.window & (p.window - 1))) {
    r.error(n["window"].Mark(), where + ".window must be a power of two, got " + std::to_string(p.window));
    ok = false;
  }
  if (ok) {
    try {  // levels against the window: what the denoiser itself accepts
      WaveletDenoiser check(p.spec(), p.window);
    } catch (const std::invalid_argument& e) {
      r.error((n["levels"] ? n["levels"] : n).Mark(), where + ": " + e.what());
    }
  }
  st.params = p;
}

// A geometry inline (a mapping, as in a geometry file) or a geometry file's path (errors then
// name the file, line and column, at the key): an ae_locate stage's, or planted AE sources'.
std::optional<AeGeometryFile> read_geometry(Reader& r, const YAML::Node& parent, const std::string& where,
                                            const std::string& needs, std::string& file) {
  const YAML::Node g = parent["geometry"];
  if (!g) {
    r.error(parent.Mark(), where + ": " + needs + " `geometry` (a mapping, or a geometry file's path)");
    return std::nullopt;
  }
  AeGeometryResult got;
  if (g.IsScalar()) {
    file = g.Scalar();
    got = load_ae_geometry_file(file);
  } else {
    got = parse_ae_geometry_node(detail::YamlNodeRef{g});
  }
  for (const ConfigError& e : got.errors) {
    if (file.empty()) {
      r.errors.push_back({e.line, e.column, where + ".geometry: " + e.message});
    } else {
      std::string at = file;
      if (e.line > 0) at += ":" + std::to_string(e.line) + ":" + std::to_string(e.column);
      r.error(g.Mark(), where + ".geometry: " + at + ": " + e.message);
    }
  }
  return got.file;
}

void read_ae_locate(Reader& r, const YAML::Node& n, const std::string& where, StageSettings& st) {
  check_kind_keys(r, n, where, kStageKeys, "ae_locate");
  AeLocateSettings p;
  if (const auto got = read_geometry(r, n, where, "an ae_locate stage needs", p.geometry_file)) {
    p.geometry = got->geometry;
    p.timing_uncertainty_set = got->timing_uncertainty_set;
    p.cluster_cell_m = got->cluster_cell_m;
  }
  if (const YAML::Node a = n["cluster_alarm"]) {
    const std::string w = where + ".cluster_alarm";
    if (r.expect_map(a, w)) {
      r.check_keys(a, w, {"metric", "window_s", "alert", "danger", "hysteresis", "on_delay_s", "off_delay_s", "latch"});
      AeClusterAlarmSettings c;
      std::string metric;
      if (r.choice(a, w, "metric", {"events_per_s", "energy_per_s"}, metric))
        c.metric = metric == "energy_per_s" ? AeClusterMetric::kEnergyPerS : AeClusterMetric::kEventsPerS;
      r.number(a, w, "window_s", 1e-3, 86400.0, c.window_s);
      read_alarm_levels(r, a, w, c.levels);
      if (p.cluster_cell_m <= 0 && n["geometry"])
        r.error(a.Mark(), w + ": clusters need the geometry's cluster_cell_m (the grid's cell size, above 0)");
      p.cluster_alarm = c;
    }
  }
  st.params = p;
}

void read_stage(Reader& r, const YAML::Node& n, const std::string& where, double nyquist, StageSettings& st) {
  if (!r.expect_map(n, where)) return;
  r.string(n, where, "name", st.name, true);
  r.string(n, where, "input", st.input, true);
  if (!r.choice(n, where, "kind", {"fir_bank", "wavelet_denoise", "band_rms", "ae_hits", "vibration", "ae_locate"}, st.kind,
                true)) {
    // A kind given but wrong: its keys cannot be judged (the kind's error says what to fix).
    if (!n["kind"]) r.check_keys(n, where, {"name", "kind", "input", "optional"});
    return;
  }
  if (r.boolean(n, where, "optional", st.optional) && st.optional &&
      (st.kind == "fir_bank" || st.kind == "wavelet_denoise"))
    r.error(n["optional"].Mark(), where + ".optional: only detector stages (band_rms, ae_hits, vibration) may be shed; "
                                         "a " + st.kind + " feeds later stages and outputs");
  if (st.kind == "fir_bank") {
    check_kind_keys(r, n, where, kStageKeys, "fir_bank");
    FirBankSettings p;
    r.number<uint32_t>(n, where, "taps", 1, 65536, p.taps);
    r.number<uint32_t>(n, where, "max_latency_frames", 0, 1u << 20, p.max_latency_frames);
    std::string planning;
    if (r.choice(n, where, "fft_planning", {"estimate", "measure", "patient"}, planning))
      p.fft_planning = planning == "patient"   ? FftPlanning::kPatient
                       : planning == "measure" ? FftPlanning::kMeasure
                                               : FftPlanning::kEstimate;
    std::string form;
    if (r.choice(n, where, "form", {"auto", "direct", "fft"}, form)) {
      p.form = form == "direct" ? FirForm::kDirect : form == "fft" ? FirForm::kFft : FirForm::kAuto;
    }
    std::string win;
    if (r.choice(n, where, "window", {"hamming", "hann", "blackman", "kaiser", "rectangular", "flattop"}, win))
      p.window.kind = *parse_window_kind(win);
    r.number(n, where, "kaiser_beta", 0.0, 50.0, p.window.kaiser_beta);
    const YAML::Node bands = n["bands"];
    if (n["crossover_hz"]) {
      if (bands) r.error(bands.Mark(), where + ": give either bands or crossover_hz, not both");
      if (r.number_list(n, where, "crossover_hz", 1e-9, nyquist * (1 - 1e-9), p.crossover_hz)) {
        if (p.crossover_hz.empty() || p.crossover_hz.size() > 255)
          r.error(n["crossover_hz"].Mark(), where + ".crossover_hz: expected 1..255 edges");
        for (size_t i = 1; i < p.crossover_hz.size(); ++i)
          if (p.crossover_hz[i] == p.crossover_hz[i - 1])
            r.error(n["crossover_hz"][i].Mark(), where + ".crossover_hz: edges must differ");
        if (p.taps % 2 == 0)
          r.error(n["crossover_hz"].Mark(), where + ": a crossover needs an odd number of taps, got taps " +
                                                std::to_string(p.taps));
        const size_t count = p.crossover_hz.size() + 1;
        std::vector<std::string> names;
        if (const YAML::Node bn = n["band_names"]) {
          if (!bn.IsSequence() || bn.size() != count) {
            r.error(bn.Mark(), where + ".band_names: expected a list of " + std::to_string(count) +
                                   " names (one per band: edges + 1)");
          } else {
            for (const auto& item : bn) names.push_back(item.Scalar());
            std::set<std::string> unique(names.begin(), names.end());
            if (unique.size() != names.size() || unique.count(""))
              r.error(bn.Mark(), where + ".band_names: names must be unique and non-empty");
          }
        }
        for (size_t i = 0; i < count; ++i)
          p.bands.push_back({names.size() == count ? names[i] : "band" + std::to_string(i), FilterType::kBandpass, 0, 0});
      }
    } else if (n["band_names"]) {
      r.error(n["band_names"].Mark(), where + ".band_names: only with crossover_hz (explicit bands have a name each)");
    } else if (!bands) {
      r.error(n.Mark(), where + ": missing required key 'bands' (or 'crossover_hz')");
    } else if (!bands.IsSequence() || bands.size() == 0 || bands.size() > 256) {
      r.error(bands.Mark(), where + ".bands: expected a list of 1..256 bands, got " + describe(bands));
    } else {
      std::set<std::string> names;
      for (size_t i = 0; i < bands.size(); ++i) {
        BandSettings b;
        const std::string w = where + ".bands[" + std::to_string(i) + "]";
        read_band(r, bands[i], w, nyquist, b);
        if (!b.name.empty() && !names.insert(b.name).second)
          r.error(bands[i]["name"].Mark(), w + ".name: band '" + b.name + "' is listed twice");
        const bool odd_needed = b.type == FilterType::kHighpass || b.type == FilterType::kBandstop;
        if (odd_needed && p.taps % 2 == 0)
          r.error(bands[i]["type"].Mark(), w + ": a " + std::string(to_string(b.type)) +
                                               " band needs an odd number of taps, got taps " + std::to_string(p.taps));
        p.bands.push_back(b);
      }
    }
    st.params = p;
  } else if (st.kind == "wavelet_denoise") {
    read_denoise(r, n, where, st);
  } else if (st.kind == "vibration") {
    read_vibration(r, n, where, nyquist, st);
  } else if (st.kind == "ae_locate") {
    read_ae_locate(r, n, where, st);
  } else if (st.kind == "ae_hits") {
    check_kind_keys(r, n, where, kStageKeys, "ae_hits");
    AeHitSettings p;
    double hdt_us = p.hdt_s * 1e6, pdt_us = p.pdt_s * 1e6, hlt_us = p.hlt_s * 1e6, max_ms = p.max_duration_s * 1e3;
    r.number(n, where, "threshold_db", -20.0, 140.0, p.threshold_db, true);
    r.number(n, where, "floating_margin_db", 0.0, 60.0, p.floating_margin_db);
    r.number(n, where, "floating_window_s", 1e-6, 3600.0, p.floating_window_s);
    r.number(n, where, "hdt_us", 0.0, 1e6, hdt_us);
    r.number(n, where, "pdt_us", 0.0, 1e6, pdt_us);
    r.number(n, where, "hlt_us", 0.0, 1e6, hlt_us);
    r.number(n, where, "max_duration_ms", 0.001, 1e4, max_ms);
    r.number(n, where, "full_scale_v", 1e-6, 1e3, p.full_scale_v);
    r.number(n, where, "preamp_gain_db", -20.0, 100.0, p.preamp_gain_db);
    r.number(n, where, "level_interval_s", 0.0, 3600.0, p.level_interval_s);
    p.hdt_s = hdt_us * 1e-6;
    p.pdt_s = pdt_us * 1e-6;
    p.hlt_s = hlt_us * 1e-6;
    p.max_duration_s = max_ms * 1e-3;
    if (const YAML::Node w = n["waveform"]) {
      const std::string ww = where + ".waveform";
      if (r.expect_map(w, ww)) {
        r.check_keys(w, ww, {"pretrigger_us", "length_us", "buffers"});
        double pre_us = 0, len_us = 0;
        r.number(w, ww, "pretrigger_us", 0.0, 1e6, pre_us);
        if (r.number(w, ww, "length_us", 1e-3, 1e7, len_us, true) && pre_us >= len_us)
          r.error(w["length_us"].Mark(), ww + ".length_us must exceed pretrigger_us (" + num_str(pre_us) + "), got " +
                                             w["length_us"].Scalar());
        r.number<uint32_t>(w, ww, "buffers", 2, 65536, p.waveform_buffers);
        p.pretrigger_s = pre_us * 1e-6;
        p.waveform_s = len_us * 1e-6;
      }
    }
    try {  // what depends on the rate (windows of at least 32 samples)
      (void)ae_sample_params(p, 2 * nyquist);
    } catch (const std::invalid_argument& e) {
      r.error(n.Mark(), where + ": " + e.what());
    }
    st.params = p;
  } else {
    check_kind_keys(r, n, where, kStageKeys, "band_rms");
    BandRmsSettings p;
    r.number(n, where, "window_s", 1e-6, 3600.0, p.window_s);
    r.number(n, where, "threshold", 0.0, 1e12, p.threshold, true);
    if (r.number(n, where, "clear_threshold", 0.0, 1e12, p.clear_threshold) && p.clear_threshold > p.threshold)
      r.error(n["clear_threshold"].Mark(), where + ".clear_threshold must not exceed threshold (" +
                                               num_str(p.threshold) + "), got " + n["clear_threshold"].Scalar());
    if (p.clear_threshold < 0) p.clear_threshold = 0.9 * p.threshold;
    st.params = p;
  }
}

void read_endpoint(Reader& r, const YAML::Node& n, const std::string& where, Endpoint& ep) {
  std::string text;
  if (!r.string(n, where, "destination", text)) return;
  std::string why;
  if (!parse_endpoint(text, ep, why)) r.error(n["destination"].Mark(), where + ".destination: " + why);
  else r.host(n["destination"], where + ".destination", ep.host);
}

// multicast_interface, multicast_ttl, multicast_loop: only for a multicast destination (given
// as an address: a name is looked up only at start).
void read_multicast(Reader& r, const YAML::Node& n, const std::string& where, const Endpoint& destination,
                    MulticastSettings& m) {
  const bool multicast = is_multicast_address(destination.host);
  for (const char* key : {"multicast_interface", "multicast_ttl", "multicast_loop"})
    if (n[key] && !multicast)
      r.error(n[key].Mark(), where + "." + key + " applies to a multicast destination (224.0.0.0/4 or ff00::/8, "
                                 "given as an address), not " + destination.host);
  if (!multicast) return;
  if (r.string(n, where, "multicast_interface", m.interface)) {
    in_addr a{};
    const bool dotted = m.interface.find_first_not_of("0123456789.") == std::string::npos;
    if (m.interface.empty() || m.interface.size() >= IF_NAMESIZE ||
        (dotted && inet_pton(AF_INET, m.interface.c_str(), &a) != 1))
      r.error(n["multicast_interface"].Mark(), where + ".multicast_interface: expected an interface's IPv4 address "
                                               "or its name (eth1), got '" + m.interface + "'");
    else if (destination.host.find(':') != std::string::npos && inet_pton(AF_INET, m.interface.c_str(), &a) == 1)
      r.error(n["multicast_interface"].Mark(), where + ".multicast_interface: an IPv6 group takes an interface "
                                               "name (eth1), not an IPv4 address");
    else
      r.host(n["multicast_interface"], where + ".multicast_interface", m.interface, HostPlace::Use::kInterface);
  }
  r.number<uint32_t>(n, where, "multicast_ttl", 0, 255, m.ttl);
  r.boolean(n, where, "multicast_loop", m.loop);
}

// A NATS name: a subject token, a stream or bucket name, a rig (letters, digits, '-', '_').
bool is_nats_name(const std::string& v) {
  return !v.empty() && v.size() <= 64 &&
         v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == std::string::npos;
}

// A file the output reads at start (TLS, credentials): it must be readable now.
void readable_file(Reader& r, const YAML::Node& n, const std::string& where, const char* key, std::string& out) {
  if (!r.string(n, where, key, out)) return;
  if (::access(out.c_str(), R_OK) != 0)
    r.error(n[key].Mark(), where + "." + key + ": cannot read '" + out + "': " + std::strerror(errno));
}

void read_fleet_output(Reader& r, const YAML::Node& o, const std::string& where, Settings& s) {
  check_kind_keys(r, o, where, kOutputKeys, "nats");
  FleetOutputSettings f;
  if (const YAML::Node sv = o["servers"]) {
    if (!sv.IsSequence() || sv.size() == 0) {
      r.error(sv.Mark(), where + ".servers: expected a list of server URLs (nats://host:4222), got " + describe(sv));
    } else {
      f.servers.clear();
      for (const auto& item : sv) {
        const std::string url = item.IsScalar() ? item.Scalar() : std::string();
        const size_t scheme = url.find("://");
        const std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
        const std::string proto = scheme == std::string::npos ? "nats" : url.substr(0, scheme);
        if (url.empty() || rest.empty() || (proto != "nats" && proto != "tls"))
          r.error(item.Mark(), where + ".servers: expected a URL nats://host:port or tls://host:port, got " +
                                   (item.IsScalar() ? "'" + url + "'" : describe(item)));
        else
          f.servers.push_back(scheme == std::string::npos ? "nats://" + url : url);
      }
    }
  }
  if (r.string(o, where, "rig", f.rig) && !is_nats_name(f.rig))
    r.error(o["rig"].Mark(), where + ".rig: letters, digits, '-' and '_' only (at most 64), got '" + f.rig + "'");
  if (r.string(o, where, "subject_prefix", f.subject_prefix)) {
    bool ok = f.subject_prefix.front() != '.' && f.subject_prefix.back() != '.' &&
              f.subject_prefix.find("..") == std::string::npos;
    for (const char c : f.subject_prefix)
      if (c == '*' || c == '>' || c == ' ' || c == '\t') ok = false;
    if (!ok)
      r.error(o["subject_prefix"].Mark(), where + ".subject_prefix: expected dot-separated tokens without wildcards "
                                                  "or spaces (vigil.rig1), got '" + f.subject_prefix + "'");
  }
  if (r.string(o, where, "stream", f.stream) && !is_nats_name(f.stream))
    r.error(o["stream"].Mark(), where + ".stream: letters, digits, '-' and '_' only, got '" + f.stream + "'");
  if (r.string(o, where, "bucket", f.bucket) && !is_nats_name(f.bucket))
    r.error(o["bucket"].Mark(), where + ".bucket: letters, digits, '-' and '_' only, got '" + f.bucket + "'");
  if (const YAML::Node t = o["types"]) {
    if (!t.IsSequence() || t.size() == 0) {
      r.error(t.Mark(), where + ".types: expected a list of event types, got " + describe(t));
    } else {
      for (const auto& item : t) {
        const std::string v = item.IsScalar() ? item.Scalar() : std::string();
        if (std::find(kFleetEventTypes.begin(), kFleetEventTypes.end(), v) == kFleetEventTypes.end()) {
          std::string list;
          for (const auto& c : kFleetEventTypes) list += (list.empty() ? "" : ", ") + c;
          std::string msg = where + ".types: '" + v + "' is not an event type (" + list + ")";
          if (const std::string near = nearest_key(v, kFleetEventTypes); !near.empty())
            msg += " (did you mean '" + near + "'?)";
          r.error(item.Mark(), msg);
        } else {
          f.types.push_back(v);
        }
      }
    }
  }
  readable_file(r, o, where, "ca", f.ca);
  readable_file(r, o, where, "cert", f.cert);
  readable_file(r, o, where, "key", f.key);
  readable_file(r, o, where, "creds", f.creds);
  if (o["cert"].IsDefined() != o["key"].IsDefined())
    r.error((o["cert"] ? o["cert"] : o["key"]).Mark(), where + ": cert and key go together (a client certificate "
                                                              "and its private key)");
  r.string(o, where, "user", f.user);
  r.string(o, where, "password", f.password);
  if (o["user"].IsDefined() != o["password"].IsDefined())
    r.error((o["user"] ? o["user"] : o["password"]).Mark(), where + ": user and password go together");
  if (o["creds"] && o["user"])
    r.error(o["user"].Mark(), where + ": give a creds file or user and password, not both");
  r.number(o, where, "status_interval_s", 0.1, 3600.0, f.status_interval_s);
  r.number(o, where, "ack_timeout_s", 0.1, 600.0, f.ack_timeout_s);
  r.number<uint32_t>(o, where, "queue_events", 16, 10000000, f.queue_events);
  r.number<uint32_t>(o, where, "max_in_flight", 1, 65536, f.max_in_flight);
  s.fleet_outputs.push_back(f);
}

void read_outputs(Reader& r, const YAML::Node& n, Settings& s) {
  if (!n.IsSequence()) {
    r.error(n.Mark(), "outputs: expected a list of outputs, got " + describe(n));
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node o = n[i];
    const std::string where = "outputs[" + std::to_string(i) + "]";
    if (!r.expect_map(o, where)) continue;
    std::string kind;
    if (!r.choice(o, where, "kind", {"vita49", "events", "nats"}, kind, true)) continue;
    if (kind == "nats") {
      if (!VIGIL_HAVE_NATS)
        r.error(o["kind"].Mark(), where + ": kind nats: this vigild was built without the NATS client (libnats-dev; "
                                          "docs/FLEET.md)");
      read_fleet_output(r, o, where, s);
    } else if (kind == "vita49") {
      check_kind_keys(r, o, where, kOutputKeys, "vita49");
      DataOutputSettings d;
      r.string(o, where, "stream", d.stream, true);
      read_endpoint(r, o, where, d.destination);
      r.boolean(o, where, "jumbo", d.jumbo);
      r.number(o, where, "context_interval_s", 0.1, 3600.0, d.context_interval_s);
      r.number<uint32_t>(o, where, "decimation", 1, 1024, d.decimation);
      r.choice(o, where, "framing", {"none", "vrl"}, d.framing);
      read_multicast(r, o, where, d.destination, d.multicast);
      s.data_outputs.push_back(d);
    } else {
      check_kind_keys(r, o, where, kOutputKeys, "events");
      EventOutputSettings e;
      read_endpoint(r, o, where, e.destination);
      r.number(o, where, "status_interval_s", 0.1, 3600.0, e.status_interval_s);
      r.choice(o, where, "framing", {"none", "lines"}, e.framing);
      r.boolean(o, where, "jumbo", e.jumbo);
      read_multicast(r, o, where, e.destination, e.multicast);
      s.event_outputs.push_back(e);
    }
  }
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void read_metrics(Reader& r, const YAML::Node& n, Settings& s) {
  if (!r.expect_map(n, "metrics")) return;
  r.check_keys(n, "metrics", {"listen", "allow_non_loopback"});
  MetricsSettings& m = s.metrics;
  m.enabled = true;
  std::string text;
  if (r.string(n, "metrics", "listen", text, true)) {
    std::string why;
    if (!parse_endpoint(text, m.listen, why)) r.error(n["listen"].Mark(), "metrics.listen: " + why);
    else r.host(n["listen"], "metrics.listen", m.listen.host, HostPlace::Use::kListen);
  }
  r.boolean(n, "metrics", "allow_non_loopback", m.allow_non_loopback);
  if (n["listen"] && !is_loopback(m.listen.host) && !m.allow_non_loopback)
    r.error(n["listen"].Mark(), "metrics.listen: '" + m.listen.host +
                                    "' is not a loopback address; set allow_non_loopback: true to expose the metrics "
                                    "on a network");
}

void read_health(Reader& r, const YAML::Node& n, Settings& s) {
  if (!r.expect_map(n, "health")) return;
  r.check_keys(n, "health", {"enabled", "sysfs_root", "interval_s", "temperature_alarm_c", "temperature_clear_c",
                             "throttle_alarm", "throttle_reference", "throttle_clear_s"});
  HealthSettings& h = s.health;
  r.boolean(n, "health", "enabled", h.enabled);
  r.string(n, "health", "sysfs_root", h.sysfs_root);
  r.number(n, "health", "interval_s", 1.0, 3600.0, h.interval_s);
  r.number(n, "health", "temperature_alarm_c", -40.0, 150.0, h.temperature_alarm_c);
  const bool clear_given = r.number(n, "health", "temperature_clear_c", -50.0, 150.0, h.temperature_clear_c);
  if (!clear_given) h.temperature_clear_c = h.temperature_alarm_c - 5;  // follows a given alarm level
  if (h.temperature_clear_c >= h.temperature_alarm_c) {
    const YAML::Node at = n["temperature_clear_c"] ? n["temperature_clear_c"] : n["temperature_alarm_c"];
    r.error(at.Mark(), "health.temperature_clear_c (" + num_str(h.temperature_clear_c) +
                           ") must be below temperature_alarm_c (" + num_str(h.temperature_alarm_c) + ")");
  }
  r.boolean(n, "health", "throttle_alarm", h.throttle_alarm);
  r.choice(n, "health", "throttle_reference", {"auto", "hardware", "start"}, h.throttle_reference);
  r.number(n, "health", "throttle_clear_s", 0.0, 3600.0, h.throttle_clear_s);
}

void read_record(Reader& r, const YAML::Node& n, Settings& s) {
  if (!r.expect_map(n, "record")) return;
  r.check_keys(n, "record", {"directory", "prefix", "max_file_mib", "max_file_s", "max_total_mib", "when_full",
                             "buffer_chunks"});
  RecordSettings& rec = s.record;
  rec.enabled = true;
  r.string(n, "record", "directory", rec.directory, true);
  if (r.string(n, "record", "prefix", rec.prefix) &&
      (rec.prefix.find('/') != std::string::npos || rec.prefix.front() == '.'))
    r.error(n["prefix"].Mark(), "record.prefix: must be a plain file name start (no '/', not starting with '.'), got '" +
                                    rec.prefix + "'");
  r.number(n, "record", "max_file_mib", 0.001, 1048576.0, rec.max_file_mib);
  r.number(n, "record", "max_file_s", 0.0, 31.0 * 86400, rec.max_file_s);
  r.number(n, "record", "max_total_mib", 0.001, 1073741824.0, rec.max_total_mib);
  r.choice(n, "record", "when_full", {"delete_oldest", "stop"}, rec.when_full);
  r.number(n, "record", "buffer_chunks", 2u, 65536u, rec.buffer_chunks);
  if (rec.max_total_mib < rec.max_file_mib) {
    const YAML::Node at = n["max_total_mib"] ? n["max_total_mib"] : n;
    r.error(at.Mark(), "record.max_total_mib (" + num_str(rec.max_total_mib) + ") must be at least max_file_mib (" +
                           num_str(rec.max_file_mib) + ")");
  }
}

// Decimation keeps every Nth sample with no filter of its own: only a fir_bank stream whose every
// band lies below the new Nyquist (rate / 2N) may be decimated, or it would alias.
void check_decimation(Reader& r, const YAML::Node& o, const std::string& where, const DataOutputSettings& out,
                      const Settings& s) {
  const YAML::Node at = o["decimation"] ? o["decimation"] : o;
  const double nyquist = s.synthetic.rate_hz / 2.0 / out.decimation;
  const StageSettings* st = nullptr;
  for (const StageSettings& x : s.stages)
    if (x.name == out.stream) st = &x;
  const auto* fb = st ? std::get_if<FirBankSettings>(&st->params) : nullptr;
  if (!fb) {
    r.error(at.Mark(), where + ".decimation: only a fir_bank stream can be decimated (its bands are the anti-alias "
                               "filters); '" + out.stream + "' is not one");
    return;
  }
  for (size_t b = 0; b < fb->bands.size(); ++b) {
    const BandSettings& band = fb->bands[b];
    double top = band.type == FilterType::kLowpass ? band.f1_hz : band.type == FilterType::kBandpass ? band.f2_hz : -1;
    if (!fb->crossover_hz.empty())  // crossover: band b spans edge b-1 .. edge b, the last one up to Nyquist
      top = b < fb->crossover_hz.size() ? fb->crossover_hz[b] : -1;
    if (top < 0 || top > nyquist) {
      r.error(at.Mark(), where + ".decimation: " + std::to_string(out.decimation) + " puts the Nyquist frequency at " +
                             num_str(nyquist) + " Hz, but band '" + band.name + "' of '" + out.stream + "' reaches " +
                             (top < 0 ? std::string("the input's Nyquist") : num_str(top) + " Hz") +
                             ": it would alias (decimate less, or send that band from a stage of its own)");
      return;
    }
  }
}

// Every name and text in the config ends up in JSON events, which must be UTF-8: a scalar (key or
// value) that is not is an error at that scalar. Returns the offset of the first bad byte, or npos.
size_t invalid_utf8_at(const std::string& text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = b[i];
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((b[i + k] & 0xC0) != 0x80) return i;
      cp = cp << 6 | (b[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;  // overlong, too large, surrogate
    i += len;
  }
  return std::string::npos;
}

// Every scalar of the tree, each once. YAML aliases make the tree a graph (yaml-cpp gives an alias
// its anchor's node): a list or mapping reached again is not walked again, and one that holds an
// alias of itself is an error. Without that `&a [*a]` recursed until the stack overflowed, and
// aliases of aliases would have taken exponential time (found by fuzz_config, 2026-12-05).
void check_utf8(Reader& r, const YAML::Node& n, std::vector<YAML::Node>& path, std::set<int>& walked) {
  if (n.IsScalar()) {
    const std::string& text = n.Scalar();
    if (const size_t at = invalid_utf8_at(text); at != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", unsigned(static_cast<unsigned char>(text[at])));
      r.error(n.Mark(), "'" + text.substr(0, at) + "...' is not valid UTF-8 (byte " + byte + " at offset " +
                            std::to_string(at) + "): names and text in the config must be UTF-8, as the events "
                            "that carry them are");
    }
    return;
  }
  if (!n.IsSequence() && !n.IsMap()) return;
  for (const YAML::Node& above : path)
    if (above.is(n)) {
      r.error(n.Mark(), "this node holds an alias of itself (an anchor named inside its own node): a config "
                        "must be a tree");
      return;
    }
  if (const YAML::Mark m = n.Mark(); !m.is_null() && !walked.insert(m.pos).second) return;  // an alias's again
  path.push_back(n);
  if (n.IsSequence())
    for (const auto& item : n) check_utf8(r, item, path, walked);
  else
    for (const auto& kv : n) {
      check_utf8(r, kv.first, path, walked);
      check_utf8(r, kv.second, path, walked);
    }
  path.pop_back();
}

void check_utf8(Reader& r, const YAML::Node& root) {
  std::vector<YAML::Node> path;
  std::set<int> walked;
  check_utf8(r, root, path, walked);
}

// The stages' names and references and the outputs' streams: checked with every other error, so
// that one run of --check-config reports them all (each stage read so far is in s.stages, in
// order, even where it had errors; a name or input in error is left empty and skipped here).
void check_graph(Reader& r, const YAML::Node& root, Settings& s) {
  const bool clean = r.errors.empty();  // the values decimation is checked against are right
  std::set<std::string> names{"input"};
  std::set<std::string> sample_streams{"input"};
  std::set<std::string> waveform_streams;  // ae_hits stages that capture hit waveforms
  std::map<std::string, const AeHitSettings*> hit_stages;  // what an ae_locate stage may read
  const YAML::Node stages = root["stages"];
  for (size_t i = 0; i < s.stages.size(); ++i) {
    StageSettings& st = s.stages[i];
    const YAML::Node sn = stages[i];
    if (st.name.empty()) continue;
    if (names.count(st.name)) r.error(sn["name"].Mark(), "stages[" + std::to_string(i) + "].name: '" + st.name +
                                                             "' is already used (names must be unique; 'input' is reserved)");
    if (auto* loc = std::get_if<AeLocateSettings>(&st.params); st.kind == "ae_locate" && loc) {
      // It reads hits, not samples: an earlier ae_hits stage.
      if (const auto h = hit_stages.find(st.input); h != hit_stages.end()) {
        loc->hits_settle_s = h->second->max_duration_s + h->second->hdt_s;
      } else if (!st.input.empty()) {
        std::vector<std::string> cands;
        for (const auto& [name, hs] : hit_stages) cands.push_back(name);
        std::string msg = "stages[" + std::to_string(i) + "].input: an ae_locate stage reads the hits of an earlier "
                          "ae_hits stage; there is none named '" + st.input + "'";
        const std::string near = nearest_key(st.input, cands);
        if (!near.empty()) msg += " (did you mean '" + near + "'?)";
        r.error(sn["input"].Mark(), msg);
      }
      names.insert(st.name);
      continue;
    }
    if (const auto* hs = std::get_if<AeHitSettings>(&st.params); st.kind == "ae_hits" && hs) hit_stages[st.name] = hs;
    if (!st.input.empty() && !sample_streams.count(st.input)) {
      std::vector<std::string> cands(sample_streams.begin(), sample_streams.end());
      std::string msg = "stages[" + std::to_string(i) + "].input: no earlier stage with samples named '" + st.input + "'";
      const std::string near = nearest_key(st.input, cands);
      if (!near.empty()) msg += " (did you mean '" + near + "'?)";
      r.error(sn["input"].Mark(), msg);
    }
    names.insert(st.name);
    // A stage whose kind is in error may be meant to give samples: no second error for its readers.
    if (st.kind == "fir_bank" || st.kind == "wavelet_denoise" || st.kind.empty()) sample_streams.insert(st.name);
    if (const auto* hits = std::get_if<AeHitSettings>(&st.params); st.kind == "ae_hits" && hits && hits->waveform_s > 0)
      waveform_streams.insert(st.name);
  }
  // No stages read while there are other errors (a misspelled `stages:` key among them): the
  // streams the outputs name cannot be judged.
  if (!root["stages"] && !clean) return;
  const YAML::Node outs = root["outputs"];
  size_t data_index = 0;
  for (size_t i = 0; outs && outs.IsSequence() && i < outs.size(); ++i) {
    if (!outs[i].IsMap() || !outs[i]["kind"] || outs[i]["kind"].Scalar() != "vita49") continue;
    if (data_index >= s.data_outputs.size()) break;
    const DataOutputSettings& out = s.data_outputs[data_index++];
    const std::string& stream = out.stream;
    if (clean && out.decimation > 1 && !stream.empty()) check_decimation(r, outs[i], "outputs[" + std::to_string(i) + "]", out, s);
    if (stream.empty() || sample_streams.count(stream) || waveform_streams.count(stream)) continue;
    std::vector<std::string> cands(sample_streams.begin(), sample_streams.end());
    std::string msg = "outputs[" + std::to_string(i) + "].stream: no stream of samples named '" + stream + "'";
    if (names.count(stream))
      msg = "outputs[" + std::to_string(i) + "].stream: stage '" + stream +
            "' produces events, not samples (an ae_hits stage sends hit waveforms when it has `waveform:`)";
    const std::string near = nearest_key(stream, cands);
    if (!near.empty()) msg += " (did you mean '" + near + "'?)";
    r.error(outs[i]["stream"].Mark(), msg);
  }
}

// The memory the source's format and the pipeline ask for: only once everything else is right
// (the sizes come from values that may be in error themselves).
void check_sizes(Reader& r, const YAML::Node& root, Settings& s) {
  const SyntheticSpec& sp = s.synthetic;
  const uint64_t chunk_bytes = uint64_t(sp.chunk_frames) * sp.channels * bytes_per_sample(sp.format);
  const uint64_t pool_bytes = chunk_bytes * s.pipeline.pool_chunks;
  if (pool_bytes > kMaxPoolBytes) {
    const YAML::Node at = root["source"] && root["source"]["chunk_frames"] ? root["source"]["chunk_frames"] : root["source"];
    r.error(at ? at.Mark() : root.Mark(),
            "source.chunk_frames: a chunk of " + std::to_string(chunk_bytes) + " bytes times pipeline.pool_chunks " +
                std::to_string(s.pipeline.pool_chunks) + " is " + std::to_string(pool_bytes) +
                " bytes, above the pool limit of " + std::to_string(kMaxPoolBytes) + " bytes");
  }
  // Output slots hold every data output's lanes of one chunk each: the same limit applies.
  std::map<std::string, uint64_t> lanes{{"input", sp.channels}};
  for (const StageSettings& st : s.stages)
    if (const auto* fb = std::get_if<FirBankSettings>(&st.params); fb && lanes.count(st.input))
      lanes[st.name] = lanes[st.input] * std::max<uint64_t>(1, fb->bands.size());
    else if (std::holds_alternative<DenoiseStageSettings>(st.params) && lanes.count(st.input))
      lanes[st.name] = lanes[st.input];
  uint64_t slot_floats = 0;
  for (const DataOutputSettings& d : s.data_outputs)
    if (lanes.count(d.stream)) slot_floats += lanes[d.stream] * sp.chunk_frames;
  const uint64_t slot_bytes = slot_floats * sizeof(float) * s.pipeline.output_slots;
  if (slot_bytes > kMaxPoolBytes) {
    const YAML::Node p = root["pipeline"];
    const YAML::Node at = p && p["output_slots"] ? p["output_slots"] : root["outputs"] ? root["outputs"] : root;
    r.error(at.Mark(), "pipeline.output_slots: " + std::to_string(s.pipeline.output_slots) + " slots of " +
                           std::to_string(slot_floats * sizeof(float)) + " bytes (every data output's lanes of one "
                           "chunk) is " + std::to_string(slot_bytes) + " bytes, above the limit of " +
                           std::to_string(kMaxPoolBytes) + " bytes: fewer slots, a smaller chunk or fewer outputs");
  }
}

}  // namespace

std::string MappingKeys::repeat(const std::string& key, int line, int column, const std::string& where) {
  const auto [it, fresh] = first_.emplace(key, std::make_pair(line, column));
  if (fresh) return "";
  return "key '" + key + "' given twice in " + where + " (first at line " + std::to_string(it->second.first + 1) +
         ", column " + std::to_string(it->second.second + 1) + ")";
}

std::string nearest_key(const std::string& word, const std::vector<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Close enough to be a typo: at most a third of the word changed (and at least one edit allowed).
  if (best_d > std::max<size_t>(1, std::max(word.size(), best.size()) / 3)) return "";
  return best;
}


namespace {

// The 1-based line and column of the first tab among a line's leading whitespace, if any.
std::optional<std::pair<int, int>> first_indenting_tab(const std::string& text) {
  int line = 1;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    for (size_t i = start; i < end && (text[i] == ' ' || text[i] == '\t'); ++i)
      if (text[i] == '\t') return std::make_pair(line, int(i - start) + 1);
    start = end + 1;
    ++line;
  }
  return std::nullopt;
}

// An unquoted "[ADDR]:PORT" on 1-based line `line`, if any, and its 1-based column: YAML reads the
// brackets as a list, and yaml-cpp then says only "end of map not found".
std::optional<std::pair<int, std::string>> unquoted_bracketed_endpoint(const std::string& text, int line) {
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    start = text.find('\n', start);
    if (start == std::string::npos) return std::nullopt;
    ++start;
  }
  const std::string one = text.substr(start, text.find('\n', start) - start);
  static const std::regex endpoint(R"(:\s+(\[[0-9A-Fa-f:.%\w]*\]:[0-9]+))");
  std::smatch m;
  if (!std::regex_search(one, m, endpoint)) return std::nullopt;
  return std::make_pair(int(m.position(1)) + 1, m.str(1));
}

}  // namespace

ConfigResult parse_config(const std::string& yaml_text, const std::string& path) {
  ConfigResult result;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    // yaml-cpp says "illegal map value" or the like for a tab in the indentation: name the tab.
    const auto tab = first_indenting_tab(yaml_text);
    const auto bracket = unquoted_bracketed_endpoint(yaml_text, e.mark.line + 1);
    if (tab && tab->first <= e.mark.line + 1)
      result.errors.push_back({tab->first, tab->second, "syntax error: a tab in the indentation (YAML indents with spaces only)"});
    else if (bracket)
      result.errors.push_back({e.mark.line + 1, bracket->first,
                               "syntax error: an address in brackets must be quoted (YAML reads [...] as a list): "
                               "write \"" + bracket->second + "\""});
    else
      result.errors.push_back({e.mark.line + 1, e.mark.column + 1, "syntax error: " + e.msg});
    return result;
  }
  Reader r;
  Settings s;
  s.path = path;
  s.config_sha256 = sha256_hex(yaml_text);
  if (!root || root.IsNull()) {
    r.error(YAML::Mark(), "the file is empty (expected a mapping with source, stages and outputs)");
  } else if (check_utf8(r, root); r.expect_map(root, "top level")) {
    r.check_keys(root, "the top level", {"source", "pipeline", "stages", "outputs", "metrics", "record", "health"});
    if (root["source"]) read_source(r, root["source"], s);
    if (root["pipeline"]) read_pipeline(r, root["pipeline"], s);
    if (const YAML::Node stages = root["stages"]) {
      if (!stages.IsSequence()) {
        r.error(stages.Mark(), "stages: expected a list of stages, got " + describe(stages));
      } else {
        for (size_t i = 0; i < stages.size(); ++i) {
          StageSettings st;
          read_stage(r, stages[i], "stages[" + std::to_string(i) + "]", s.synthetic.rate_hz / 2.0, st);
          s.stages.push_back(std::move(st));
        }
      }
    }
    if (root["outputs"]) read_outputs(r, root["outputs"], s);
    if (root["metrics"]) read_metrics(r, root["metrics"], s);
    if (root["record"]) read_record(r, root["record"], s);
    if (root["health"]) read_health(r, root["health"], s);
    check_graph(r, root, s);
    if (r.errors.empty()) check_sizes(r, root, s);
  }
  result.errors = std::move(r.errors);
  result.warnings = std::move(r.warnings);
  result.hosts = std::move(r.hosts);
  std::stable_sort(result.hosts.begin(), result.hosts.end(), [](const HostPlace& a, const HostPlace& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  std::stable_sort(result.errors.begin(), result.errors.end(), [](const ConfigError& a, const ConfigError& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  if (result.errors.empty()) result.settings = std::move(s);
  return result;
}

ConfigResult load_config_file(const std::string& path) {
  // A directory opens and reads as an empty file: say what it is instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    ConfigResult r;
    r.errors.push_back({0, 0, "is a directory, not a config file"});
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigResult r;
    r.errors.push_back({0, 0, "cannot read the file: " + std::string(std::strerror(errno))});
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

std::string format_error(const std::string& path, const ConfigError& e) {
  if (e.line == 0) return path + ": " + e.message;
  return path + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) + ": " + e.message;
}

}  // namespace vigil
