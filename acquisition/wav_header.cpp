#include "acquisition/wav_header.hpp"

#include "acquisition/input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace vigil {
namespace {

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

}  // namespace

WavHeader read_wav_header(const std::string& path) {
  std::ifstream f = open_input_file(path, std::ios::binary | std::ios::ate);
  const uint64_t file_bytes = uint64_t(f.tellg());
  f.seekg(0);
  uint8_t head[12];
  if (!f.read(reinterpret_cast<char*>(head), 12) || std::memcmp(head, "RIFF", 4) || std::memcmp(head + 8, "WAVE", 4))
    fail(path, "not a WAV file (no RIFF/WAVE header)");
  WavHeader h;
  bool have_fmt = false, have_data = false;
  uint8_t ch[8];
  while (!(have_fmt && have_data) && f.read(reinterpret_cast<char*>(ch), 8)) {
    const uint32_t size = le32(ch + 4);
    const uint64_t body = uint64_t(f.tellg());
    if (!std::memcmp(ch, "fmt ", 4)) {
      // The size comes from the file: check it against the file before reading (a few bytes
      // claiming a 4 GiB fmt chunk must not make us allocate 4 GiB). 40 bytes hold every field.
      if (size < 16 || size > file_bytes - body) fail(path, "truncated fmt chunk");
      std::vector<uint8_t> b(std::min<uint32_t>(size, 40));
      if (!f.read(reinterpret_cast<char*>(b.data()), std::streamsize(b.size()))) fail(path, "truncated fmt chunk");
      h.format = le16(b.data());
      h.channels = le16(b.data() + 2);
      h.rate_hz = le32(b.data() + 4);
      h.bits = le16(b.data() + 14);
      if (h.format == 0xFFFE && b.size() >= 26) h.format = le16(b.data() + 24);  // the subformat GUID opens with it
      have_fmt = true;
    } else if (!std::memcmp(ch, "data", 4)) {
      h.data_offset = body;
      h.data_bytes = std::min<uint64_t>(size, file_bytes - body);
      h.data_bytes_declared = size;
      have_data = true;
    }
    f.seekg(std::streamoff(body + size + (size & 1)));  // chunks are padded to even sizes
  }
  if (!have_data) fail(path, "no data chunk");
  if (!have_fmt) fail(path, "no fmt chunk");
  if (h.channels == 0 || h.rate_hz == 0) fail(path, "fmt chunk gives 0 channels or rate 0");
  return h;
}

}  // namespace vigil
