// VRL frames (VITA 49.1, the VRT link layer): several VITA 49 packets in one UDP datagram.
//   word 0     frame alignment word "VRLP" (0x56524C50)
//   word 1     bits 31-20 frame count (12 bits, +1 per frame and sender), bits 19-0 frame size in
//              32-bit words, header and trailer included
//   words 2..  the packets, back to back, each as its own header's size field says
//   last word  CRC-32, or "VEND" (0x56454E44) for none; vigild writes "VEND" (UDP has a checksum)
// Big-endian on the wire. Thread: any; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vigil::vrl {

constexpr uint32_t kFrameAlignmentWord = 0x56524C50;  // "VRLP"
constexpr uint32_t kNoCrc = 0x56454E44;               // "VEND"
constexpr size_t kHeaderBytes = 8, kTrailerBytes = 4;
constexpr size_t kOverheadBytes = kHeaderBytes + kTrailerBytes;

// Fills in the header and trailer of a frame whose `payload_bytes` of packets (a multiple of 4)
// already sit at frame + kHeaderBytes. Returns the frame's size in bytes.
size_t close_frame(uint8_t* frame, size_t payload_bytes, uint16_t frame_count) noexcept;

// Whether a datagram is a VRL frame (starts with "VRLP"). A VITA 49 packet starting so would be an
// extension context packet (type 5), which vigild never sends.
bool is_frame(const uint8_t* data, size_t size) noexcept;

struct FrameInfo {
  uint16_t frame_count = 0;
  size_t packets = 0;
  bool has_crc = false;  // the trailer is a CRC (not checked here), not "VEND"
};

// A big-endian word.
inline uint32_t word_at(const uint8_t* p) noexcept {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// The VITA 49 packets of one datagram: the datagram itself when it is not a VRL frame, else each
// packet of the frame in order, as f(const uint8_t* packet, size_t bytes). Returns false (with
// why) when the frame is malformed: its size field disagrees with the datagram, a packet's size is
// 0 or runs past the trailer. Packets before the fault have been given to f then.
template <class F>
bool for_each_packet(const uint8_t* data, size_t size, F&& f, FrameInfo* info = nullptr, std::string* why = nullptr) {
  if (!is_frame(data, size)) {
    f(data, size);
    if (info) *info = {};
    return true;
  }
  auto fail = [&](const char* what) {
    if (why) *why = what;
    return false;
  };
  if (size < kOverheadBytes || size % 4) return fail("VRL frame shorter than its header and trailer, or not whole words");
  const uint32_t w1 = word_at(data + 4);
  if (size_t(w1 & 0xFFFFF) * 4 != size) return fail("VRL frame size field disagrees with the datagram");
  const size_t end = size - kTrailerBytes;
  FrameInfo fi;
  fi.frame_count = uint16_t(w1 >> 20);
  fi.has_crc = word_at(data + end) != kNoCrc;
  for (size_t at = kHeaderBytes; at < end;) {
    const size_t bytes = size_t(word_at(data + at) & 0xFFFF) * 4;
    if (bytes == 0 || bytes > end - at) {
      if (info) *info = fi;
      return fail("a packet in the VRL frame runs past its end (or has size 0)");
    }
    f(data + at, bytes);
    ++fi.packets;
    at += bytes;
  }
  if (info) *info = fi;
  return true;
}

// Builds VRL frames of at most `frame_bytes` in place, packet by packet. Thread: one owner.
class FrameWriter {
 public:
  // Starts a frame at `frame` (room for frame_bytes).
  void open(uint8_t* frame, size_t frame_bytes) noexcept {
    frame_ = frame;
    cap_ = frame_bytes;
    used_ = kHeaderBytes;
    packets_ = 0;
  }
  bool is_open() const noexcept { return frame_ != nullptr; }
  // Where the next packet goes, and its room (the trailer kept free).
  uint8_t* cursor() const noexcept { return frame_ + used_; }
  size_t room() const noexcept { return cap_ - used_ - kTrailerBytes; }
  void add(size_t packet_bytes) noexcept {
    used_ += packet_bytes;
    ++packets_;
  }
  uint32_t packets() const noexcept { return packets_; }
  // Ends the frame: returns its size (0 for none open), with header and trailer written.
  size_t close(uint16_t frame_count) noexcept {
    if (!frame_) return 0;
    const size_t n = close_frame(frame_, used_ - kHeaderBytes, frame_count);
    frame_ = nullptr;
    return n;
  }

 private:
  uint8_t* frame_ = nullptr;
  size_t cap_ = 0, used_ = 0;
  uint32_t packets_ = 0;
};

}  // namespace vigil::vrl
