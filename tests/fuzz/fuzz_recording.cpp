// Fuzz target: the recording readers (WAV, SigMF) and the offline sample-file reader on any file
// contents. The first byte picks the kind; for SigMF the next two bytes give the metadata's
// length, the rest is the data file. Every outcome is a clean error or a replay that delivers at
// most the frames the header promised — never a crash or an out-of-bounds read.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "acquisition/file_source.hpp"
#include "acquisition/sample_file.hpp"

namespace {

std::string dir() {
  static const std::string d = [] {
    const std::string p = std::filesystem::temp_directory_path() / ("vigil-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}

void write(const std::string& path, const uint8_t* p, size_t n) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(p), std::streamsize(n));
}

void replay(const std::string& path) {
  try {
    vigil::FileSource src({path, 64, 0.0, false});
    const vigil::SourceFormat f = src.format();
    std::vector<std::byte> mem(size_t(64) * f.channels * 4);
    vigil::Chunk c;
    c.data = mem.data();
    c.capacity_bytes = mem.size();
    uint64_t frames = 0;
    for (int i = 0; i < 100000; ++i) {
      const vigil::ReadStatus st = src.read(c);
      if (st != vigil::ReadStatus::kOk) break;
      if (c.header.frames == 0 || c.header.frames > 64) __builtin_trap();
      frames += c.header.frames;
    }
    if (frames > src.info().frames) __builtin_trap();
  } catch (const std::exception&) {  // a clear error is the right answer to a bad file
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t kind = data[0] % 3;
  ++data, --size;
  if (kind == 0) {
    const std::string p = dir() + "/x.wav";
    write(p, data, size);
    replay(p);
    try {
      vigil::read_sample_file(p, 0);
    } catch (const std::exception&) {
    }
  } else if (kind == 1) {
    if (size < 2) return 0;
    const size_t meta = std::min<size_t>(size - 2, size_t(data[0]) | size_t(data[1]) << 8);
    write(dir() + "/r.sigmf-meta", data + 2, meta);
    write(dir() + "/r.sigmf-data", data + 2 + meta, size - 2 - meta);
    replay(dir() + "/r.sigmf-meta");
  } else {
    const std::string p = dir() + "/x.f32";
    write(p, data, size);
    try {
      const vigil::SampleFile f = vigil::read_sample_file(p);
      if (f.samples.size() != size / 4) __builtin_trap();
    } catch (const std::exception&) {
    }
  }
  return 0;
}
