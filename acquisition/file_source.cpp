// RT: read() on the capture thread. File reads are this source's capture: they block only the
// capture thread, never the pipeline.
#include "acquisition/file_source.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/stream_format.hpp"
#include "acquisition/input_file.hpp"
#include "core/rfc3339.hpp"
#include "acquisition/wav_header.hpp"

#if VIGIL_HAVE_SNDFILE
#include <sndfile.h>
#endif

namespace vigil {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}


uint64_t file_size(const std::string& path) {
  std::ifstream f = open_input_file(path, std::ios::binary | std::ios::ate);
  return uint64_t(f.tellg());
}

// Bytes after the last whole frame are not replayed: said, not dropped in silence.
void note_partial_frame(const std::string& path, uint64_t data_bytes, uint64_t frame_bytes, RecordingInfo& info) {
  if (const uint64_t rest = data_bytes % frame_bytes)
    info.cuts.push_back(path + ": the data ends in a partial frame: " + std::to_string(rest) + " of its " +
                        std::to_string(frame_bytes) + " bytes after frame " + std::to_string(data_bytes / frame_bytes) +
                        " are left out (the file holds " + std::to_string(data_bytes / frame_bytes) + " whole frames)");
}

RecordingInfo probe_wav(const std::string& path) {
  const WavHeader w = read_wav_header(path);
  RecordingInfo info;
  info.data_path = path;
  info.data_offset = w.data_offset;
  info.channels = w.channels;
  info.rate_hz = w.rate_hz;
  info.bytes_per_sample_on_disk = w.bits / 8;
  if (w.format == 1 && w.bits == 16) info.format = SampleFormat::kInt16;
  else if (w.format == 1 && (w.bits == 24 || w.bits == 32)) info.format = SampleFormat::kInt32;
  else if (w.format == 3 && w.bits == 32) info.format = SampleFormat::kFloat32;
  else fail(path, "unsupported WAV format " + std::to_string(w.format) + " with " + std::to_string(w.bits) +
                  " bits (PCM 16/24/32 and float 32 are supported)");
  const uint64_t frame_bytes = uint64_t(info.bytes_per_sample_on_disk) * info.channels;
  info.frames = w.data_bytes / frame_bytes;
  if (w.data_bytes < w.data_bytes_declared)
    info.cuts.push_back(path + ": the header declares " + std::to_string(w.data_bytes_declared / frame_bytes) +
                        " frames (" + std::to_string(w.data_bytes_declared) + " bytes of data), the file holds " +
                        std::to_string(info.frames) + ": the last " +
                        std::to_string(w.data_bytes_declared / frame_bytes - info.frames) + " are missing");
  note_partial_frame(path, w.data_bytes, frame_bytes, info);
  return info;
}

RecordingInfo probe_sigmf(const std::string& path) {
  std::string base = path;
  for (const char* ext : {".sigmf-meta", ".sigmf-data"})
    if (ends_with(base, ext)) base.resize(base.size() - std::strlen(ext));
  const std::string meta_path = base + ".sigmf-meta";
  std::ifstream m = open_input_file(meta_path, std::ios::in);
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
  if (info.channels < 1 || info.channels > kMaxChannels)
    fail(meta_path, "core:num_channels must be 1.." + std::to_string(kMaxChannels));
  const uint64_t bytes = file_size(info.data_path);
  info.frames = bytes / (uint64_t(info.bytes_per_sample_on_disk) * info.channels);
  note_partial_frame(info.data_path, bytes, uint64_t(info.bytes_per_sample_on_disk) * info.channels, info);
  if (meta.contains("captures") && meta["captures"].is_array()) {
    const nlohmann::json& caps = meta["captures"];
    for (size_t i = 0; i < caps.size(); ++i) {
      const std::string where = meta_path + ": captures[" + std::to_string(i) + "]";
      if (!caps[i].is_object()) fail(where, "expected an object");
      RecordingSegment seg;
      auto index = [&](const char* key, uint64_t fallback) {
        if (!caps[i].contains(key)) return fallback;
        if (!caps[i][key].is_number_unsigned()) fail(where, std::string(key) + " must be a non-negative integer");
        return caps[i][key].get<uint64_t>();
      };
      seg.sample_start = index("core:sample_start", 0);
      const RecordingSegment* prev = info.segments.empty() ? nullptr : &info.segments.back();
      if (prev && seg.sample_start <= prev->sample_start)
        fail(where, "core:sample_start must be above the previous capture's");
      if (!prev && seg.sample_start != 0) fail(where, "the first capture must start at core:sample_start 0");
      if (seg.sample_start >= info.frames && info.frames > 0)
        fail(where, "core:sample_start " + std::to_string(seg.sample_start) + " is past the data's " +
                        std::to_string(info.frames) + " frames");
      const uint64_t contiguous = prev ? prev->global_index + (seg.sample_start - prev->sample_start) : 0;
      seg.global_index = index("core:global_index", contiguous);
      if (prev && seg.global_index < contiguous)
        fail(where, "core:global_index goes backwards (" + std::to_string(seg.global_index) + " < " +
                        std::to_string(contiguous) + ")");
      seg.frames_lost_before = prev ? seg.global_index - contiguous : 0;
      if (prev && caps[i].contains("vigil:frames_lost_before") && caps[i]["vigil:frames_lost_before"].is_number_unsigned())
        seg.frames_lost_before = std::max(seg.frames_lost_before, caps[i]["vigil:frames_lost_before"].get<uint64_t>());
      seg.source_overrun = caps[i].value("vigil:source_overrun", false);
      if (prev && caps[i].contains("vigil:clock_step_s") && caps[i]["vigil:clock_step_s"].is_number()) {
        const double step_s = caps[i]["vigil:clock_step_s"].get<double>();
        if (std::isfinite(step_s) && std::fabs(step_s) < 1e9) seg.clock_step_ns = std::llround(step_s * 1e9);
      }
      const std::string when = caps[i].value("core:datetime", "");
      if (!when.empty()) {
        if (!parse_rfc3339_utc(when, seg.utc_ns)) fail(where, "core:datetime is not RFC 3339 UTC: '" + when + "'");
        seg.has_datetime = true;
      }
      info.segments.push_back(seg);
    }
  }
  if (info.segments.empty()) info.segments.push_back({});
  info.has_datetime = info.segments[0].has_datetime;
  info.start_utc_ns = info.segments[0].utc_ns;
  return info;
}

}  // namespace

#if VIGIL_HAVE_SNDFILE
// FLAC through libsndfile: 16-bit as int16, 24/32-bit as int32 (libsndfile's int reads are
// left-justified, so full scale is kept), lossless, so a replay is sample-exact.
RecordingInfo probe_flac(const std::string& path) {
  SF_INFO sfi{};
  SNDFILE* f = sf_open(path.c_str(), SFM_READ, &sfi);
  if (!f) fail(path, std::string("cannot read as FLAC: ") + sf_strerror(nullptr));
  sf_close(f);
  if ((sfi.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_FLAC) fail(path, "not a FLAC file");
  RecordingInfo info;
  info.data_path = path;
  info.frames = uint64_t(sfi.frames);
  info.rate_hz = sfi.samplerate;
  info.channels = uint32_t(sfi.channels);
  const int sub = sfi.format & SF_FORMAT_SUBMASK;
  info.format = sub == SF_FORMAT_PCM_16 || sub == SF_FORMAT_PCM_S8 ? SampleFormat::kInt16 : SampleFormat::kInt32;
  info.bytes_per_sample_on_disk = 0;  // decoded by libsndfile
  if (info.channels < 1 || info.channels > kMaxChannels)
    fail(path, "channels must be 1.." + std::to_string(kMaxChannels) + ", got " + std::to_string(info.channels));
  return info;
}
#endif

namespace {

// A folder with no SigMF recording in it: what is there instead.
std::string folder_hint(const std::string& path) {
  std::vector<std::string> recordings;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    if (ends_with(name, ".wav") || ends_with(name, ".WAV") || ends_with(name, ".flac") || ends_with(name, ".FLAC"))
      recordings.push_back(name);
  }
  if (recordings.empty()) return "a folder with no recording in it (a folder replays its .sigmf-meta recordings)";
  std::sort(recordings.begin(), recordings.end());
  std::string text = "a folder with no SigMF recording in it (a folder replays those): give one of its recordings, " +
                     recordings.front();
  if (recordings.size() > 1) text += " to " + recordings.back() + " (" + std::to_string(recordings.size()) + ")";
  return text;
}

// Every SigMF recording in a folder as one (see the header): the parts in name order, each file's
// segments counted across them, a later run's global indexes moved on past the run before.
RecordingInfo probe_sigmf_folder(const std::string& path) {
  std::vector<std::string> metas;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec))
    if (ends_with(entry.path().filename().string(), ".sigmf-meta")) metas.push_back(entry.path().string());
  if (metas.empty()) fail(path, folder_hint(path));
  std::sort(metas.begin(), metas.end());
  RecordingInfo all;
  std::vector<std::string> all_cuts;
  uint64_t shift = 0;  // added to the global indexes of the run being read
  for (const std::string& meta : metas) {
    RecordingInfo f = probe_sigmf(meta);
    all_cuts.insert(all_cuts.end(), f.cuts.begin(), f.cuts.end());
    if (f.frames == 0) continue;  // a run stopped before its first chunk: nothing to replay
    if (all.parts.empty()) {
      all = f;  // its format, start time, and data path and offset (the first part's)
      all.frames = 0;
      all.segments.clear();
    } else if (f.rate_hz != all.rate_hz || f.channels != all.channels || f.format != all.format) {
      const auto what = [](const RecordingInfo& r) {
        char text[96];
        std::snprintf(text, sizeof text, "%u channel%s of %s at %g Hz", r.channels, r.channels == 1 ? "" : "s",
                      to_string(r.format).data(), r.rate_hz);
        return std::string(text);
      };
      fail(meta, "differs from the folder's first recording (" + what(f) + ", not " + what(all) +
                     "): replay it on its own");
    }
    for (size_t k = 0; k < f.segments.size(); ++k) {
      RecordingSegment seg = f.segments[k];
      seg.sample_start += all.frames;
      if (k == 0 && !all.segments.empty()) {
        const RecordingSegment& prev = all.segments.back();
        const uint64_t contiguous = prev.global_index + (seg.sample_start - prev.sample_start);
        if (seg.global_index + shift < contiguous) {
          // A later run: its frames lost are known only by time.
          uint64_t lost = 0;
          if (seg.has_datetime && prev.has_datetime) {
            const int64_t due = prev.utc_ns + frames_to_ns(seg.sample_start - prev.sample_start, all.rate_hz);
            if (seg.utc_ns > due) lost = uint64_t(std::llround(double(seg.utc_ns - due) * all.rate_hz / 1e9));
          }
          shift = contiguous + lost - seg.global_index;
        }
        seg.global_index += shift;
        seg.frames_lost_before = seg.global_index - contiguous;
      } else {
        seg.global_index += shift;
      }
      all.segments.push_back(seg);
    }
    all.parts.push_back({f.data_path, f.data_offset, all.frames, f.frames});
    all.frames += f.frames;
  }
  if (all.parts.empty()) fail(path, "its SigMF recordings hold no complete frame");
  all.cuts = std::move(all_cuts);
  return all;
}

RecordingInfo probe_one_recording(const std::string& path) {
  if (ends_with(path, ".wav") || ends_with(path, ".WAV")) {
    RecordingInfo info = probe_wav(path);
    info.segments.push_back({});
    return info;
  }
  if (ends_with(path, ".flac") || ends_with(path, ".FLAC")) {
#if VIGIL_HAVE_SNDFILE
    RecordingInfo info = probe_flac(path);
    info.segments.push_back({});
    return info;
#else
    fail(path, "this build has no FLAC support (libsndfile was not found at build time)");
#endif
  }
  if (ends_with(path, ".sigmf-meta") || ends_with(path, ".sigmf-data") || ends_with(path, ".sigmf"))
    return probe_sigmf(ends_with(path, ".sigmf") ? path.substr(0, path.size() - 6) : path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return probe_sigmf_folder(path);
  fail(path, "unknown recording type (use .wav, .flac, .sigmf-meta or .sigmf-data, or a folder of SigMF recordings)");
}

}  // namespace

RecordingInfo probe_recording(const std::string& path) {
  RecordingInfo info = probe_one_recording(path);
  if (info.parts.empty()) info.parts.push_back({info.data_path, info.data_offset, 0, info.frames});
  return info;
}

FileSource::FileSource(FileSourceSpec spec) : spec_(std::move(spec)), info_(probe_recording(spec_.path)) {
  if (spec_.chunk_frames < 1 || spec_.chunk_frames > (1u << 20))
    throw std::invalid_argument("file source: chunk_frames must be 1..1048576, got " + std::to_string(spec_.chunk_frames));
  if (!(spec_.rate_factor >= 0 && spec_.rate_factor <= 10000))
    throw std::invalid_argument("file source: rate_factor must be 0..10000");
  if (info_.frames == 0) throw std::runtime_error(spec_.path + ": the recording holds no complete frame");
  const RecordingSegment& last = info_.segments.back();
  span_frames_ = last.global_index + (info_.frames - last.sample_start) - info_.segments[0].global_index;
#if VIGIL_HAVE_SNDFILE
  if (info_.bytes_per_sample_on_disk == 0) {
    SF_INFO sfi{};
    sndfile_ = sf_open(info_.data_path.c_str(), SFM_READ, &sfi);
    if (!sndfile_) throw std::runtime_error(info_.data_path + ": cannot open: " + sf_strerror(nullptr));
    return;
  }
#endif
  open_part(0);
  raw_.resize(size_t(spec_.chunk_frames) * info_.channels * info_.bytes_per_sample_on_disk);
}

void FileSource::open_part(size_t part) {
  const RecordingPart& p = info_.parts[part];
  file_.close();
  file_.clear();
  file_.open(p.data_path, std::ios::binary);
  if (!file_) throw std::runtime_error(p.data_path + ": cannot open: " + std::strerror(errno));
  file_.seekg(std::streamoff(p.data_offset));
  part_ = part;
}

SourceFormat FileSource::format() const noexcept {
  return {info_.rate_hz, info_.channels, info_.format, spec_.chunk_frames, full_scale_factor(info_.format)};
}

ReadStatus FileSource::read(Chunk& chunk) noexcept {
  const std::vector<RecordingSegment>& segs = info_.segments;
  if (!started_) {
    if (spec_.rate_factor > 0) pace_.start(mono_now_ns(), info_.rate_hz, spec_.rate_factor, spec_.chunk_frames);
    // Each segment's time: its own core:datetime, else extrapolated from the one before.
    segment_utc_ns_.resize(segs.size());  // once, before the first chunk
    for (size_t i = 0; i < segs.size(); ++i)
      segment_utc_ns_[i] = segs[i].has_datetime ? segs[i].utc_ns
                           : i == 0             ? utc_now_ns()
                                                : segment_utc_ns_[i - 1] +
                                       frames_to_ns(segs[i].global_index - segs[i - 1].global_index, info_.rate_hz);
    started_ = true;
  }
  try {
    if (frame_in_file_ >= info_.frames) {
      if (!spec_.loop) return ReadStatus::kEnd;
#if VIGIL_HAVE_SNDFILE
      if (sndfile_) sf_seek(static_cast<SNDFILE*>(sndfile_), 0, SEEK_SET);
      else
#endif
        open_part(0);
      frame_in_file_ = 0;
      segment_ = 0;
      ++loops_;
    }
    // A folder's next file (a part starts a segment, so no chunk spans two).
    if (part_ + 1 < info_.parts.size() && frame_in_file_ >= info_.parts[part_ + 1].first_frame) open_part(part_ + 1);
  } catch (const std::exception&) {  // a file of the folder gone since the start
    return ReadStatus::kError;
  }
  const bool segment_start = frame_in_file_ == segs[segment_].sample_start;
  const uint64_t segment_end = segment_ + 1 < segs.size() ? segs[segment_ + 1].sample_start : info_.frames;
  const uint32_t ch = info_.channels;
  const auto frames = uint32_t(std::min<uint64_t>(spec_.chunk_frames, segment_end - frame_in_file_));
  const size_t disk_bytes = size_t(frames) * ch * info_.bytes_per_sample_on_disk;
  if (size_t(frames) * ch * bytes_per_sample(info_.format) > chunk.capacity_bytes) return ReadStatus::kError;
#if VIGIL_HAVE_SNDFILE
  if (sndfile_) {
    auto* sf = static_cast<SNDFILE*>(sndfile_);
    const sf_count_t got = info_.format == SampleFormat::kInt16
                               ? sf_readf_short(sf, reinterpret_cast<short*>(chunk.data), frames)
                               : sf_readf_int(sf, reinterpret_cast<int*>(chunk.data), frames);
    if (got != sf_count_t(frames)) return ReadStatus::kError;
  } else
#endif
  if (!file_.read(reinterpret_cast<char*>(raw_.data()), std::streamsize(disk_bytes))) return ReadStatus::kError;
  if (sndfile_) {
    // decoded straight into the chunk above
  } else if (info_.bytes_per_sample_on_disk == 3) {  // 24-bit little-endian PCM -> int32 (full scale kept)
    auto* out = reinterpret_cast<int32_t*>(chunk.data);
    for (size_t i = 0; i < size_t(frames) * ch; ++i) {
      const uint8_t* p = raw_.data() + 3 * i;
      out[i] = int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24);
    }
  } else {
    std::memcpy(chunk.data, raw_.data(), disk_bytes);  // little-endian on both targets
  }
  const RecordingSegment& seg = segs[segment_];
  const uint64_t in_segment = frame_in_file_ - seg.sample_start;
  ChunkHeader& h = chunk.header;
  h.first_frame = loops_ * span_frames_ + seg.global_index + in_segment;
  h.frames = frames;
  h.channels = ch;
  h.format = info_.format;
  h.t_first_utc_ns = segment_utc_ns_[segment_] + int64_t(loops_) * frames_to_ns(span_frames_, info_.rate_hz) +
                     frames_to_ns(in_segment, info_.rate_hz);
  h.flags = 0;
  h.frames_lost_before = 0;
  h.clock_step_ns = 0;
  if (segment_start && segment_ > 0 && seg.frames_lost_before > 0) {  // as it was live
    h.flags |= chunk_flags::kOverrunBefore;
    if (seg.source_overrun) h.flags |= chunk_flags::kSourceOverrun;
    h.frames_lost_before = seg.frames_lost_before;
  }
  if (segment_start && segment_ > 0 && seg.clock_step_ns != 0) {  // as it was live
    h.flags |= chunk_flags::kClockStepped;
    h.clock_step_ns = seg.clock_step_ns;
  }
  delivered_ += frames;
  frame_in_file_ += frames;
  if (frame_in_file_ == segment_end && segment_ + 1 < segs.size()) ++segment_;
  if (spec_.rate_factor > 0) pace_.wait_for(delivered_);
  h.t_capture_mono_ns = mono_now_ns();
  return ReadStatus::kOk;
}

FileSource::~FileSource() {
#if VIGIL_HAVE_SNDFILE
  if (sndfile_) sf_close(static_cast<SNDFILE*>(sndfile_));
#endif
}

}  // namespace vigil
