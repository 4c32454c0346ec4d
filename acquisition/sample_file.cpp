#include "acquisition/sample_file.hpp"

#include "acquisition/input_file.hpp"
#include "acquisition/wav_header.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace vigil {
namespace {

std::string extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string e = path.substr(dot + 1);
  for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in = open_input_file(path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

SampleFile read_wav(const std::string& path, const std::vector<uint8_t>& b, uint32_t channel) {
  const WavHeader w = read_wav_header(path);
  const uint16_t format = w.format, channels = w.channels, bits = w.bits;
  const bool pcm = format == 1 && (bits == 8 || bits == 16 || bits == 24 || bits == 32);
  const bool flt = format == 3 && (bits == 32 || bits == 64);
  if (!pcm && !flt)
    throw std::runtime_error(path + ": unsupported WAV format " + std::to_string(format) + " with " +
                             std::to_string(bits) + " bits");
  if (channel >= channels)
    throw std::runtime_error(path + ": --channel " + std::to_string(channel) + " is out of range: the file has " +
                             std::to_string(channels) + " channel(s)");
  // The header came from the file on disk; the bytes read earlier hold the same data.
  const uint8_t* data = b.data() + std::min<uint64_t>(w.data_offset, b.size());
  const size_t data_bytes = size_t(std::min<uint64_t>(w.data_bytes, b.size() - std::min<uint64_t>(w.data_offset, b.size())));
  const uint32_t rate = w.rate_hz;
  const size_t width = bits / 8, frame = width * channels, frames = data_bytes / frame;
  SampleFile f;
  f.rate_hz = rate;
  f.channels = channels;
  f.samples.resize(frames);
  for (size_t i = 0; i < frames; ++i) {
    const uint8_t* p = data + i * frame + channel * width;
    double v = 0;
    if (flt && bits == 32) {
      float x;
      std::memcpy(&x, p, 4);
      v = x;
    } else if (flt) {
      std::memcpy(&v, p, 8);
    } else if (bits == 8) {
      v = (double(p[0]) - 128.0) / 128.0;
    } else if (bits == 16) {
      v = double(int16_t(le16(p))) / 32768.0;
    } else if (bits == 24) {
      const int32_t s = int32_t(uint32_t(p[0]) << 8 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 24) >> 8;
      v = double(s) / 8388608.0;
    } else {
      v = double(int32_t(le32(p))) / 2147483648.0;
    }
    f.samples[i] = v;
  }
  return f;
}

}  // namespace

SampleFile read_sample_file(const std::string& path, uint32_t channel) {
  const std::string ext = extension(path);
  if (ext != "f32" && ext != "f64" && ext != "wav")
    throw std::runtime_error(path + ": unknown file type (use .f32, .f64 or .wav)");
  const std::vector<uint8_t> b = read_all(path);
  if (ext == "wav") return read_wav(path, b, channel);
  if (channel != 0) throw std::runtime_error(path + ": --channel applies to WAV files only");
  const size_t width = ext == "f32" ? 4 : 8;
  if (b.size() % width)
    throw std::runtime_error(path + ": " + std::to_string(b.size()) + " bytes is not a whole number of " +
                             std::to_string(width) + "-byte samples");
  SampleFile f;
  f.samples.resize(b.size() / width);
  for (size_t i = 0; i < f.samples.size(); ++i) {
    if (width == 4) {
      float x;
      std::memcpy(&x, b.data() + 4 * i, 4);
      f.samples[i] = x;
    } else {
      std::memcpy(&f.samples[i], b.data() + 8 * i, 8);
    }
  }
  return f;
}

void write_sample_file(const std::string& path, const std::vector<double>& samples) {
  const std::string ext = extension(path);
  if (ext != "f32" && ext != "f64") throw std::runtime_error(path + ": output must be .f32 or .f64");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
  for (double v : samples) {
    if (ext == "f32") {
      const float x = float(v);
      out.write(reinterpret_cast<const char*>(&x), 4);
    } else {
      out.write(reinterpret_cast<const char*>(&v), 8);
    }
  }
  if (!out) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}

}  // namespace vigil
