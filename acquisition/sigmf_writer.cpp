#include "acquisition/sigmf_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/clock.hpp"
#include "core/rfc3339.hpp"

namespace vigil {
namespace {

// Writes all of [p, p+n) or returns the errno that stopped it.
int write_all(int fd, const void* p, size_t n) noexcept {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, b, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    b += w;
    n -= size_t(w);
  }
  return 0;
}

}  // namespace

const char* sigmf_datatype(SampleFormat f) noexcept {
  switch (f) {
    case SampleFormat::kInt16: return "ri16_le";
    case SampleFormat::kInt32: return "ri32_le";
    case SampleFormat::kFloat32: return "rf32_le";
  }
  return "ri16_le";
}

SigmfWriter::SigmfWriter(std::string base_path, SigmfGlobal global)
    : data_path_(base_path + ".sigmf-data"), meta_path_(base_path + ".sigmf-meta"), global_(std::move(global)) {
  fd_ = ::open(data_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd_ < 0) throw std::runtime_error(data_path_ + ": cannot create: " + std::strerror(errno));
  if (const int err = write_meta()) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(data_path_.c_str());
    throw std::runtime_error(meta_path_ + ": cannot write: " + std::strerror(err));
  }
}

SigmfWriter::~SigmfWriter() { close(); }

int SigmfWriter::append(const ChunkHeader& h, const void* data) noexcept {
  if (fd_ < 0) return EBADF;
  const double period_ns = 1e9 / global_.rate_hz;
  const bool first = frames_ == 0;
  const bool gap = !first && (h.first_frame != next_frame_ || h.frames_lost_before > 0 ||
                              std::fabs(double(h.t_first_utc_ns - next_utc_ns_)) > 0.5 * period_ns);
  if (first || gap) {
    try {  // the capture segment's JSON allocates: out of memory is an error to return, not to throw
      nlohmann::json c = {{"core:sample_start", frames_},
                          {"core:global_index", h.first_frame},
                          {"core:datetime", rfc3339_utc(h.t_first_utc_ns)}};
      if (gap) {
        const uint64_t lost = h.first_frame > next_frame_ ? h.first_frame - next_frame_ : h.frames_lost_before;
        c["vigil:frames_lost_before"] = lost;
        if (h.flags & chunk_flags::kSourceOverrun) c["vigil:source_overrun"] = true;
        if (h.flags & chunk_flags::kClockStepped) c["vigil:clock_step_s"] = double(h.clock_step_ns) * 1e-9;
      }
      captures_.push_back(std::move(c));
    } catch (...) {
      return ENOMEM;
    }
    if (first) first_utc_ns_ = h.t_first_utc_ns;
  }
  const size_t bytes = size_t(h.frames) * h.channels * bytes_per_sample(global_.format);
  if (const int err = write_all(fd_, data, bytes)) {
    // Keep the file to whole chunks so the metadata and the data agree.
    if (ftruncate(fd_, off_t(data_bytes_)) != 0) { /* the error that matters is err */ }
    if (first || gap) captures_.erase(captures_.size() - 1);
    return err;
  }
  data_bytes_ += bytes;
  frames_ += h.frames;
  next_frame_ = h.first_frame + h.frames;
  next_utc_ns_ = h.t_first_utc_ns + frames_to_ns(h.frames, global_.rate_hz);
  return (first || gap) ? write_meta() : 0;
}

int SigmfWriter::write_meta() noexcept {
  try {
    nlohmann::json meta;
    meta["global"] = {{"core:datatype", sigmf_datatype(global_.format)},
                      {"core:sample_rate", global_.rate_hz},
                      {"core:num_channels", global_.channels},
                      {"core:version", "1.0.0"},
                      {"core:recorder", std::string("vigil ") + VIGIL_VERSION},
                      {"vigil:config_sha256", global_.config_sha256}};
    if (!global_.description.empty()) meta["global"]["core:description"] = global_.description;
    meta["captures"] = captures_;
    meta["annotations"] = nlohmann::json::array();
    const std::string text = meta.dump(2) + "\n";
    const std::string tmp = meta_path_ + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) return errno;
    int err = write_all(fd, text.data(), text.size());
    if (::close(fd) != 0 && !err) err = errno;
    if (!err && ::rename(tmp.c_str(), meta_path_.c_str()) != 0) err = errno;
    if (err) ::unlink(tmp.c_str());
    return err;
  } catch (...) {
    return ENOMEM;
  }
}

int SigmfWriter::close() noexcept {
  if (fd_ < 0) return 0;
  int err = fdatasync(fd_) != 0 ? errno : 0;
  if (::close(fd_) != 0 && !err) err = errno;
  fd_ = -1;
  const int meta_err = write_meta();
  return err ? err : meta_err;
}

}  // namespace vigil
