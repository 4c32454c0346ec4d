// RT: read() on the capture thread. File reads are this source's capture: they block only the
// capture thread, never the pipeline.
#include "acquisition/file_source.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "acquisition/clock.hpp"

namespace vigil {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

uint64_t file_size(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  return uint64_t(f.tellg());
}

RecordingInfo probe_wav(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  uint8_t head[12];
  if (!f.read(reinterpret_cast<char*>(head), 12) || std::memcmp(head, "RIFF", 4) || std::memcmp(head + 8, "WAVE", 4))
    fail(path, "not a WAV file (no RIFF/WAVE header)");
  RecordingInfo info;
  info.data_path = path;
  uint16_t fmt = 0, bits = 0;
  bool have_fmt = false;
  for (;;) {
    uint8_t ch[8];
    if (!f.read(reinterpret_cast<char*>(ch), 8)) fail(path, "no data chunk");
    const uint32_t size = le32(ch + 4);
    if (!std::memcmp(ch, "fmt ", 4)) {
      std::vector<uint8_t> body(size);
      if (size < 16 || !f.read(reinterpret_cast<char*>(body.data()), size)) fail(path, "truncated fmt chunk");
      fmt = le16(body.data());
      info.channels = le16(body.data() + 2);
      info.rate_hz = le32(body.data() + 4);
      bits = le16(body.data() + 14);
      if (fmt == 0xFFFE && size >= 26) fmt = le16(body.data() + 24);
      if (size & 1) f.ignore(1);
      have_fmt = true;
    } else if (!std::memcmp(ch, "data", 4)) {
      if (!have_fmt) fail(path, "data chunk before the fmt chunk");
      info.data_offset = uint64_t(f.tellg());
      const uint64_t avail = file_size(path) - info.data_offset;
      const uint64_t bytes = std::min<uint64_t>(size, avail);  // a truncated file keeps what it has
      info.bytes_per_sample_on_disk = bits / 8;
      if (info.channels == 0 || info.rate_hz <= 0) fail(path, "fmt chunk gives 0 channels or rate 0");
      info.frames = bytes / (uint64_t(info.bytes_per_sample_on_disk) * info.channels);
      break;
    } else {
      f.ignore(size + (size & 1));
    }
  }
  if (fmt == 1 && bits == 16) info.format = SampleFormat::kInt16;
  else if (fmt == 1 && (bits == 24 || bits == 32)) info.format = SampleFormat::kInt32;
  else if (fmt == 3 && bits == 32) info.format = SampleFormat::kFloat32;
  else fail(path, "unsupported WAV format " + std::to_string(fmt) + " with " + std::to_string(bits) +
                  " bits (PCM 16/24/32 and float 32 are supported)");
  return info;
}

RecordingInfo probe_sigmf(const std::string& path) {
  std::string base = path;
  for (const char* ext : {".sigmf-meta", ".sigmf-data"})
    if (ends_with(base, ext)) base.resize(base.size() - std::strlen(ext));
  const std::string meta_path = base + ".sigmf-meta";
  std::ifstream m(meta_path);
  if (!m) fail(meta_path, std::string("cannot open: ") + std::strerror(errno));
  const nlohmann::json meta = nlohmann::json::parse(m, nullptr, false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("global"))
    fail(meta_path, "not SigMF metadata (a JSON object with \"global\")");
  const nlohmann::json& g = meta["global"];
  RecordingInfo info;
  info.data_path = base + ".sigmf-data";
  const std::string dt = g.value("core:datatype", "");
  if (dt == "ri16_le") info.format = SampleFormat::kInt16, info.bytes_per_sample_on_disk = 2;
  else if (dt == "ri32_le") info.format = SampleFormat::kInt32, info.bytes_per_sample_on_disk = 4;
  else if (dt == "rf32_le") info.format = SampleFormat::kFloat32, info.bytes_per_sample_on_disk = 4;
  else fail(meta_path, "core:datatype '" + dt + "' is not supported (ri16_le, ri32_le, rf32_le)");
  info.rate_hz = g.value("core:sample_rate", 0.0);
  info.channels = g.value("core:num_channels", 1u);
  if (!(info.rate_hz > 0)) fail(meta_path, "core:sample_rate must be > 0");
  if (info.channels < 1 || info.channels > 1024) fail(meta_path, "core:num_channels must be 1..1024");
  if (meta.contains("captures") && meta["captures"].is_array() && !meta["captures"].empty()) {
    const std::string when = meta["captures"][0].value("core:datetime", "");
    if (!when.empty()) {
      // RFC 3339 UTC ("...Z"), fraction optional.
      int y, mo, d, h, mi, se, used = 0;
      if (std::sscanf(when.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &used) == 6) {
        tm parts{};
        parts.tm_year = y - 1900, parts.tm_mon = mo - 1, parts.tm_mday = d, parts.tm_hour = h, parts.tm_min = mi,
        parts.tm_sec = se;
        int64_t frac = 0, digits = 0;
        size_t i = size_t(used);
        if (i < when.size() && when[i] == '.')
          for (++i; i < when.size() && std::isdigit(static_cast<unsigned char>(when[i])); ++i, ++digits)
            if (digits < 9) frac = frac * 10 + (when[i] - '0');
        for (int64_t k = std::min<int64_t>(digits, 9); k < 9; ++k) frac *= 10;
        info.start_utc_ns = int64_t(timegm(&parts)) * 1'000'000'000 + frac;
        info.has_datetime = true;
      } else {
        fail(meta_path, "captures[0].core:datetime is not RFC 3339: '" + when + "'");
      }
    }
  }
  const uint64_t bytes = file_size(info.data_path);
  info.frames = bytes / (uint64_t(info.bytes_per_sample_on_disk) * info.channels);
  return info;
}

}  // namespace

RecordingInfo probe_recording(const std::string& path) {
  if (ends_with(path, ".wav") || ends_with(path, ".WAV")) return probe_wav(path);
  if (ends_with(path, ".sigmf-meta") || ends_with(path, ".sigmf-data") || ends_with(path, ".sigmf"))
    return probe_sigmf(ends_with(path, ".sigmf") ? path.substr(0, path.size() - 6) : path);
  fail(path, "unknown recording type (use .wav, .sigmf-meta or .sigmf-data)");
}

FileSource::FileSource(FileSourceSpec spec) : spec_(std::move(spec)), info_(probe_recording(spec_.path)) {
  if (spec_.chunk_frames < 1 || spec_.chunk_frames > (1u << 20))
    throw std::invalid_argument("file source: chunk_frames must be 1..1048576, got " + std::to_string(spec_.chunk_frames));
  if (!(spec_.rate_factor >= 0 && spec_.rate_factor <= 10000))
    throw std::invalid_argument("file source: rate_factor must be 0..10000");
  if (info_.frames == 0) throw std::runtime_error(spec_.path + ": the recording holds no complete frame");
  file_.open(info_.data_path, std::ios::binary);
  if (!file_) throw std::runtime_error(info_.data_path + ": cannot open: " + std::strerror(errno));
  file_.seekg(std::streamoff(info_.data_offset));
  raw_.resize(size_t(spec_.chunk_frames) * info_.channels * info_.bytes_per_sample_on_disk);
}

SourceFormat FileSource::format() const noexcept {
  return {info_.rate_hz, info_.channels, info_.format, spec_.chunk_frames, full_scale_factor(info_.format)};
}

ReadStatus FileSource::read(Chunk& chunk) noexcept {
  if (!started_) {
    start_mono_ns_ = mono_now_ns();
    start_utc_ns_ = info_.has_datetime ? info_.start_utc_ns : utc_now_ns();
    started_ = true;
  }
  if (frame_in_file_ >= info_.frames) {
    if (!spec_.loop) return ReadStatus::kEnd;
    file_.clear();
    file_.seekg(std::streamoff(info_.data_offset));
    frame_in_file_ = 0;
  }
  const uint32_t ch = info_.channels;
  const auto frames = uint32_t(std::min<uint64_t>(spec_.chunk_frames, info_.frames - frame_in_file_));
  const size_t disk_bytes = size_t(frames) * ch * info_.bytes_per_sample_on_disk;
  if (size_t(frames) * ch * bytes_per_sample(info_.format) > chunk.capacity_bytes) return ReadStatus::kError;
  if (!file_.read(reinterpret_cast<char*>(raw_.data()), std::streamsize(disk_bytes))) return ReadStatus::kError;
  if (info_.bytes_per_sample_on_disk == 3) {  // 24-bit little-endian PCM -> int32 (full scale kept)
    auto* out = reinterpret_cast<int32_t*>(chunk.data);
    for (size_t i = 0; i < size_t(frames) * ch; ++i) {
      const uint8_t* p = raw_.data() + 3 * i;
      out[i] = int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24);
    }
  } else {
    std::memcpy(chunk.data, raw_.data(), disk_bytes);  // little-endian on both targets
  }
  ChunkHeader& h = chunk.header;
  h.first_frame = next_frame_;
  h.frames = frames;
  h.channels = ch;
  h.format = info_.format;
  h.t_first_utc_ns = start_utc_ns_ + frames_to_ns(next_frame_, info_.rate_hz);
  next_frame_ += frames;
  frame_in_file_ += frames;
  if (spec_.rate_factor > 0)
    sleep_until_mono_ns(start_mono_ns_ + int64_t(double(frames_to_ns(next_frame_, info_.rate_hz)) / spec_.rate_factor));
  h.t_capture_mono_ns = mono_now_ns();
  return ReadStatus::kOk;
}

}  // namespace vigil
