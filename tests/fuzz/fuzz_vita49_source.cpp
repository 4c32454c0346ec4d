// Fuzz target: the VITA 49 source's packet path (acquisition/vita49_source), what any datagram on
// its port reaches: the input is a run of datagrams, each a 2-byte big-endian length and its bytes,
// taken one after the other, with a chunk asked for after each (as if its wait were over every
// other time). The chunks must keep their promises: at most chunk_frames frames, each starting
// after the last one ended (plus the frames said lost), inside the chunk's memory; nothing may
// crash, read or write out of bounds, or overflow.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "acquisition/vita49_source.hpp"

namespace {

constexpr uint32_t kChunkFrames = 256, kChannels = 3;

vigil::Vita49Source& source() {
  static vigil::Vita49Source src([] {
    vigil::Vita49SourceSpec s;
    s.listen_host = "127.0.0.1";
    s.listen_port = 0;                   // any free port: nothing is received on it here
    s.streams = {0x00000000, 0x00000001, 0x01000000};  // vigild's first outputs' streams (the corpus)
    s.rate_hz = 51200;
    s.format = vigil::SampleFormat::kFloat32;  // no context packets needed to start
    s.chunk_frames = kChunkFrames;
    s.max_wait_s = 0.01;
    return s;
  }());
  return src;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::Vita49Source& src = source();
  static std::vector<std::byte> memory(kChunkFrames * kChannels * 4);
  static int64_t now = 1'000'000'000;
  static uint64_t next_first = 0;
  static bool delivered = false;
  vigil::Chunk chunk;
  chunk.data = memory.data();
  chunk.capacity_bytes = memory.size();
  bool wait_over = false;
  for (size_t at = 0; at + 2 <= size;) {
    const size_t len = size_t(data[at]) << 8 | data[at + 1];
    at += 2;
    const size_t n = len < size - at ? len : size - at;
    std::vector<uint8_t> datagram(data + at, data + at + n);  // its own allocation: ASan sees overreads
    at += n;
    now += 1'000'000;
    src.on_datagram(datagram.data(), datagram.size(), now);
    chunk.header = {};
    wait_over = !wait_over;
    while (src.deliver_now(chunk, wait_over, now)) {
      const vigil::ChunkHeader& h = chunk.header;
      if (h.frames == 0 || h.frames > kChunkFrames || h.channels != kChannels) __builtin_trap();
      if (delivered && h.first_frame != next_first + h.frames_lost_before) __builtin_trap();
      delivered = true;
      next_first = h.first_frame + h.frames;
      chunk.header = {};
    }
  }
  return 0;
}
