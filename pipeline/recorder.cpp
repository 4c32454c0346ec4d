#include "pipeline/recorder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/clock.hpp"

namespace vigil {
namespace fs = std::filesystem;

namespace {

constexpr const char* kDataExt = ".sigmf-data";
constexpr const char* kMetaExt = ".sigmf-meta";

// The recordings of this prefix in the directory: base path -> bytes and last write time.
struct Found {
  std::string base;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

std::vector<Found> find_recordings(const std::string& dir, const std::string& prefix) {
  std::vector<Found> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix + "-", 0) != 0) continue;
    std::string base;
    for (const char* ext : {kDataExt, kMetaExt})
      if (name.size() > std::strlen(ext) && name.ends_with(ext)) base = e.path().string().substr(0, e.path().string().size() - std::strlen(ext));
    if (base.empty()) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Found& f) { return f.base == base; });
    if (it == out.end()) it = out.insert(out.end(), Found{base, 0, 0});
    it->bytes += uint64_t(st.st_size);
    it->mtime_ns = std::max(it->mtime_ns, int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec);
  }
  if (ec) throw std::runtime_error(dir + ": cannot read: " + ec.message());
  return out;
}

uint64_t size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

}  // namespace

Recorder::Recorder(const RecordSettings& settings, const SourceFormat& format, std::string config_sha256,
                   std::string description, PostEvent post_event)
    : settings_(settings), format_(format), post_event_(std::move(post_event)), slots_(settings.buffer_chunks),
      free_(settings.buffer_chunks), full_(settings.buffer_chunks), config_sha256_(std::move(config_sha256)),
      description_(std::move(description)) {
  std::error_code ec;
  fs::create_directories(settings_.directory, ec);
  if (ec) throw std::runtime_error("record.directory " + settings_.directory + ": cannot create: " + ec.message());
  if (::access(settings_.directory.c_str(), W_OK) != 0)
    throw std::runtime_error("record.directory " + settings_.directory + ": not writable: " + std::strerror(errno));
  for (const Found& f : find_recordings(settings_.directory, settings_.prefix)) total_bytes_ += f.bytes;
  max_file_bytes_ = uint64_t(settings_.max_file_mib * 1048576.0);
  max_total_bytes_ = uint64_t(settings_.max_total_mib * 1048576.0);
  max_file_frames_ = settings_.max_file_s > 0 ? uint64_t(std::llround(settings_.max_file_s * format_.rate_hz)) : 0;
  const size_t chunk_bytes = size_t(format_.chunk_frames) * format_.channels * bytes_per_sample(format_.format);
  for (Slot& s : slots_) {
    s.data.resize(chunk_bytes);
    free_.push(&s);
  }
}

Recorder::~Recorder() {
  if (writer_) writer_->close();
}

void Recorder::offer(const Chunk& chunk) noexcept {
  if (!accepting_.load(std::memory_order_relaxed)) return;
  Slot* s = nullptr;
  if (!free_.pop(s)) {  // the disk is behind: this chunk is lost to the recording (a new segment)
    chunks_dropped_.fetch_add(1, std::memory_order_relaxed);
    frames_dropped_.fetch_add(chunk.header.frames, std::memory_order_relaxed);
    return;
  }
  s->header = chunk.header;
  std::memcpy(s->data.data(), chunk.data,
              std::min(s->data.size(), size_t(chunk.header.frames) * chunk.header.channels *
                                           bytes_per_sample(chunk.header.format)));
  full_.push(s);  // cannot fail: the queue holds every slot
}

void Recorder::run(const std::function<bool()>& upstream_finished) {
  Slot* s = nullptr;
  for (;;) {
    if (full_.pop(s)) {
      if (accepting_.load(std::memory_order_relaxed)) write(*s);
      free_.push(s);
      continue;
    }
    // upstream_finished() is an acquire pairing with the pipeline's release after its last
    // offer(): once true, one more empty pop means everything offered has been written.
    if (upstream_finished()) {
      if (full_.pop(s)) {
        if (accepting_.load(std::memory_order_relaxed)) write(*s);
        free_.push(s);
        continue;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (writer_) close_file("end");
  finished_.store(true, std::memory_order_release);
}

void Recorder::rotate_for_config(std::string config_sha256) {
  const std::lock_guard<std::mutex> lock(mu_);
  config_sha256_ = std::move(config_sha256);
  rotate_requested_ = true;
}

void Recorder::write(const Slot& slot) {
  const ChunkHeader& h = slot.header;
  const uint64_t bytes = uint64_t(h.frames) * h.channels * bytes_per_sample(h.format);
  bool rotate;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    rotate = rotate_requested_;
    rotate_requested_ = false;
  }
  if (writer_ && writer_->frames() > 0) {
    if (rotate) close_file("config");
    else if (writer_->data_bytes() + bytes > max_file_bytes_) close_file("size");
    else if (max_file_frames_ && writer_->frames() + h.frames > max_file_frames_) close_file("duration");
  }
  if (!make_room(bytes)) {
    stop("the recordings reached record.max_total_mib (" + std::to_string(settings_.max_total_mib) +
         " MiB) and when_full is " + (settings_.when_full == "stop" ? "stop" : "delete_oldest with nothing left to delete"));
    return;
  }
  if (!writer_) {
    try {
      open_file(h);
    } catch (const std::exception& e) {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
      stop(e.what());
      return;
    }
  }
  if (const int err = writer_->append(h, slot.data.data())) {
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    stop(writer_->data_path() + ": write failed: " + std::strerror(err));
    return;
  }
  total_bytes_ += bytes;
  chunks_written_.fetch_add(1, std::memory_order_relaxed);
  frames_written_.fetch_add(h.frames, std::memory_order_relaxed);
  bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
}

bool Recorder::make_room(uint64_t bytes) {
  while (total_bytes_ + bytes > max_total_bytes_) {
    if (settings_.when_full == "stop") return false;
    std::vector<Found> found = find_recordings(settings_.directory, settings_.prefix);
    const std::string current = writer_ ? writer_->data_path().substr(0, writer_->data_path().size() - std::strlen(kDataExt)) : "";
    std::erase_if(found, [&](const Found& f) { return f.base == current; });
    if (found.empty()) return false;
    const auto oldest = std::min_element(found.begin(), found.end(), [](const Found& a, const Found& b) {
      return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.base < b.base;  // names sort by start time
    });
    std::error_code ec;
    fs::remove(oldest->base + kDataExt, ec);
    fs::remove(oldest->base + kMetaExt, ec);
    total_bytes_ = total_bytes_ > oldest->bytes ? total_bytes_ - oldest->bytes : 0;
    files_deleted_.fetch_add(1, std::memory_order_relaxed);
    log_.printf(5, "record: deleted %s (%llu bytes) to stay under max_total_mib", oldest->base.c_str(),
                (unsigned long long)oldest->bytes);
    post_event_("record", {{"action", "delete"}, {"file", oldest->base + kDataExt}, {"bytes", oldest->bytes},
                           {"reason", "record.max_total_mib"}});
  }
  return true;
}

void Recorder::open_file(const ChunkHeader& first) {
  const std::time_t secs = std::time_t(first.t_first_utc_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  SigmfGlobal g;
  g.rate_hz = format_.rate_hz;
  g.channels = format_.channels;
  g.format = format_.format;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    g.config_sha256 = config_sha256_;
    g.description = description_;
  }
  // A name already taken (a restart within the same second) moves on to the next index.
  for (int attempt = 0;; ++attempt) {
    char index[16];
    std::snprintf(index, sizeof index, "%04llu", (unsigned long long)file_index_++);
    const std::string base = settings_.directory + "/" + settings_.prefix + "-" + stamp + "-" + index;
    if (fs::exists(base + kDataExt) && attempt < 10000) continue;
    writer_ = std::make_unique<SigmfWriter>(base, g);
    break;
  }
  {
    const std::lock_guard<std::mutex> lock(mu_);
    current_file_ = writer_->data_path();
  }
  total_bytes_ += size_of(writer_->meta_path());
  log_.printf(6, "record: writing %s", writer_->data_path().c_str());
  post_event_("record", {{"action", "open"}, {"file", writer_->data_path()}, {"frame", first.first_frame},
                         {"config_sha256", g.config_sha256}});
}

void Recorder::close_file(const char* why) {
  const uint64_t meta_before = size_of(writer_->meta_path());
  const int err = writer_->close();  // rewrites the metadata: account for its new size
  const uint64_t meta_after = size_of(writer_->meta_path());
  total_bytes_ = total_bytes_ + meta_after - std::min(total_bytes_ + meta_after, meta_before);
  files_written_.fetch_add(1, std::memory_order_relaxed);
  nlohmann::json ev = {{"action", "close"},       {"file", writer_->data_path()}, {"frames", writer_->frames()},
                       {"bytes", writer_->data_bytes()}, {"segments", writer_->segments()}, {"reason", why}};
  if (err) ev["error"] = std::strerror(err);
  post_event_("record", std::move(ev));
  writer_.reset();
  const std::lock_guard<std::mutex> lock(mu_);
  current_file_.clear();
}

void Recorder::stop(const std::string& why) {
  accepting_.store(false, std::memory_order_relaxed);
  if (writer_) close_file("stopped");
  {
    const std::lock_guard<std::mutex> lock(mu_);
    state_ = "stopped";
    stop_reason_ = why;
  }
  log_.printf(3, "record: recording stopped (the pipeline runs on): %s", why.c_str());
  post_event_("record", {{"action", "stop"}, {"reason", why}});
}

nlohmann::json Recorder::status_json() const {
  nlohmann::json j;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    j["state"] = state_;
    j["file"] = current_file_;
    if (!stop_reason_.empty()) j["reason"] = stop_reason_;
  }
  j["files_written"] = files_written_.load(std::memory_order_relaxed);
  j["chunks_written"] = chunks_written_.load(std::memory_order_relaxed);
  j["frames_written"] = frames_written_.load(std::memory_order_relaxed);
  j["bytes_written"] = bytes_written_.load(std::memory_order_relaxed);
  j["chunks_dropped"] = chunks_dropped_.load(std::memory_order_relaxed);
  j["frames_dropped"] = frames_dropped_.load(std::memory_order_relaxed);
  j["files_deleted"] = files_deleted_.load(std::memory_order_relaxed);
  j["write_errors"] = write_errors_.load(std::memory_order_relaxed);
  return j;
}

}  // namespace vigil
