#include "wire/vrl_frame.hpp"

namespace vigil::vrl {
namespace {

void put32(uint8_t* p, uint32_t v) noexcept {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}

}  // namespace

size_t close_frame(uint8_t* frame, size_t payload_bytes, uint16_t frame_count) noexcept {
  const size_t bytes = payload_bytes + kOverheadBytes;
  put32(frame, kFrameAlignmentWord);
  put32(frame + 4, uint32_t(frame_count & 0xFFF) << 20 | uint32_t(bytes / 4));
  put32(frame + kHeaderBytes + payload_bytes, kNoCrc);
  return bytes;
}

bool is_frame(const uint8_t* data, size_t size) noexcept {
  return size >= 4 && word_at(data) == kFrameAlignmentWord;
}

}  // namespace vigil::vrl
