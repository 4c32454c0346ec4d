// VITA 49.2 signal data and context packets: encoding (vigild) and decoding (vigil-listen, tests).
// Big-endian on the wire. Thread: any; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/sample_format.hpp"

namespace vigil::vita49 {

constexpr uint32_t kOui = 0xFF'FF'FA;          // class id OUI: a placeholder, not IEEE-assigned (docs/PROTOCOL.md)
constexpr uint16_t kInfoClass = 0x5647;        // "VG"
constexpr uint16_t kPacketClassFloat32 = 0x0001;
constexpr uint16_t kPacketClassContext = 0x0100;

constexpr size_t kDataOverheadBytes = 32;      // header, stream id, class id, TSI, TSF, trailer
constexpr size_t kMaxDatagram = 1472;          // Ethernet MTU 1500 - IPv4 20 - UDP 8
constexpr size_t kMaxJumboDatagram = 8972;     // MTU 9000
constexpr size_t kIpv6HeaderGrowth = 20;       // an IPv6 header is 40 bytes, IPv4's 20

// The largest datagram that crosses an Ethernet (or, jumbo, a 9000-byte MTU) link unfragmented.
constexpr size_t max_datagram(bool jumbo, bool ipv6) noexcept {
  return (jumbo ? kMaxJumboDatagram : kMaxDatagram) - (ipv6 ? kIpv6HeaderGrowth : 0);
}
constexpr size_t kContextBytes = 48;

// Samples that fit in one data packet of at most max_datagram bytes.
constexpr size_t max_samples_per_packet(size_t max_datagram) noexcept {
  return (max_datagram - kDataOverheadBytes) / 4;
}

enum class PacketType : uint8_t { kSignalDataWithStreamId = 1, kContext = 4 };

// Trailer bits (enable bit and indicator bit pairs).
constexpr uint32_t kTrailerValidDataEnable = 1u << 30, kTrailerValidData = 1u << 18;
constexpr uint32_t kTrailerOverRangeEnable = 1u << 25, kTrailerOverRange = 1u << 13;
constexpr uint32_t kTrailerSampleLossEnable = 1u << 24, kTrailerSampleLoss = 1u << 12;
// User-defined indicator 0 (bits 23 and 11), Vigil's: the time line starts anew at this packet
// (the source's wall clock stepped; acquisition/wall_clock.hpp), so its timestamp is not the
// previous packet's plus its samples, and no sample was lost for it. Set only on such packets.
constexpr uint32_t kTrailerTimeStepEnable = 1u << 23, kTrailerTimeStep = 1u << 11;

struct DataPacket {
  uint32_t stream_id = 0;
  uint8_t packet_count = 0;  // 0..15, per stream
  uint32_t ts_int = 0;       // UTC seconds
  uint64_t ts_frac_ps = 0;   // picoseconds within the second, 0..999999999999
  bool sample_loss = false;  // samples were lost before this packet
  bool over_range = false;   // a sample in this packet's chunk was at full scale
  bool time_step = false;    // the time line moved before this packet (kTrailerTimeStep)
};

struct ContextPacket {
  uint32_t stream_id = 0;
  uint8_t packet_count = 0;
  uint32_t ts_int = 0;
  uint64_t ts_frac_ps = 0;
  bool changed = true;       // context field change indicator
  double sample_rate_hz = 0;
};

// Writes one data packet of n float32 samples to out (capacity cap). Returns the bytes written,
// or 0 when it does not fit or n is 0.
size_t encode_data(const DataPacket& p, const float* samples, size_t n, uint8_t* out, size_t cap) noexcept;
size_t encode_context(const ContextPacket& p, uint8_t* out, size_t cap) noexcept;

// Splits UTC picoseconds into (ts_int, ts_frac_ps).
inline void split_ps(__int128 utc_ps, uint32_t& ts_int, uint64_t& ts_frac_ps) noexcept {
  ts_int = uint32_t(utc_ps / 1'000'000'000'000);
  ts_frac_ps = uint64_t(utc_ps % 1'000'000'000'000);
}

struct Decoded {
  PacketType type{};
  uint32_t stream_id = 0;
  bool has_class_id = false;
  uint32_t oui = 0;
  uint16_t info_class = 0, packet_class = 0;
  uint8_t packet_count = 0;
  uint8_t tsi = 0, tsf = 0;
  uint32_t ts_int = 0;
  uint64_t ts_frac = 0;
  bool has_trailer = false;
  uint32_t trailer = 0;
  // data packets
  const uint8_t* payload = nullptr;  // big-endian float32 samples
  size_t samples = 0;
  // context packets
  uint32_t cif0 = 0;
  bool has_sample_rate = false;
  double sample_rate_hz = 0;
  bool has_payload_format = false;
  uint64_t payload_format = 0;

  float sample(size_t i) const noexcept;
  // Samples [first, first + n) in host order into out. Pre: first + n <= samples.
  void copy_samples(size_t first, size_t n, float* out) const noexcept;
};

// Decodes one datagram. Returns false (with why) for anything malformed or unsupported.
bool decode(const uint8_t* data, size_t size, Decoded& out, std::string* why = nullptr) noexcept;

// A context packet's data payload format field: the sample format it says the data packets carry
// (real, no tags, signed 16/32-bit fixed point or float32, each in a field of its own size); false
// with why for anything else.
bool payload_sample_format(uint64_t payload_format, SampleFormat& format, std::string* why = nullptr) noexcept;

// The payload format field vigild's context packets carry: real float32.
constexpr uint64_t kFloat32PayloadFormat = uint64_t(0x0Eu << 24 | 31u << 6 | 31u) << 32;

// A stream id as receivers name it: eight lower-case hex digits ("01002003").
std::string stream_id_hex(uint32_t stream_id);

}  // namespace vigil::vita49
