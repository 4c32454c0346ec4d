// VITA 49.2 field layout (ANSI/VITA 49.2-2017): header word bits 31-28 packet type, 27 class id
// present, 26 trailer present (data), 23-22 TSI, 21-20 TSF, 19-16 packet count, 15-0 size in words.
#include "wire/vita49.hpp"

#include <bit>
#include <cstdio>
#include <cstring>

#include "dsp/simd.hpp"

// Samples go out and come in by one byte swap (simd::byteswap32): x86-64 and aarch64 (Jetson) are
// little-endian; a big-endian host would copy them as they are instead.
static_assert(std::endian::native == std::endian::little, "VITA 49 sample swap assumes a little-endian host");

namespace vigil::vita49 {
namespace {

constexpr uint32_t kTsiUtc = 1;           // integer-seconds timestamp: UTC
constexpr uint32_t kTsfRealTimePs = 2;    // fractional timestamp: real time, picoseconds
constexpr uint32_t kCifChange = 1u << 31;
constexpr uint32_t kCifSampleRate = 1u << 21;
constexpr uint32_t kCifPayloadFormat = 1u << 15;

inline void put32(uint8_t*& p, uint32_t v) noexcept {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
  p += 4;
}
inline void put64(uint8_t*& p, uint64_t v) noexcept {
  put32(p, uint32_t(v >> 32));
  put32(p, uint32_t(v));
}
inline uint32_t get32(const uint8_t* p) noexcept {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
inline uint64_t get64(const uint8_t* p) noexcept { return uint64_t(get32(p)) << 32 | get32(p + 4); }

uint32_t header_word(PacketType type, bool trailer, uint8_t count, size_t words) noexcept {
  return uint32_t(type) << 28 | 1u << 27 | (trailer ? 1u << 26 : 0u) | kTsiUtc << 22 | kTsfRealTimePs << 20 |
         uint32_t(count & 0xF) << 16 | uint32_t(words);
}

// Header, stream id, class id and both timestamps: the prologue every packet we send starts with.
void put_prologue(uint8_t*& w, PacketType type, bool trailer, uint8_t count, size_t words, uint32_t stream_id,
                  uint16_t packet_class, uint32_t ts_int, uint64_t ts_frac_ps) noexcept {
  put32(w, header_word(type, trailer, count, words));
  put32(w, stream_id);
  put32(w, kOui);
  put32(w, uint32_t(kInfoClass) << 16 | packet_class);
  put32(w, ts_int);
  put64(w, ts_frac_ps);
}


}  // namespace

size_t encode_data(const DataPacket& p, const float* samples, size_t n, uint8_t* out, size_t cap) noexcept {
  const size_t bytes = kDataOverheadBytes + 4 * n;
  if (n == 0 || bytes > cap || bytes / 4 > 0xFFFF) return 0;
  uint8_t* w = out;
  put_prologue(w, PacketType::kSignalDataWithStreamId, true, p.packet_count, bytes / 4, p.stream_id,
               kPacketClassFloat32, p.ts_int, p.ts_frac_ps);
  simd::byteswap32(samples, w, n);  // big-endian float32
  w += 4 * n;
  uint32_t trailer = kTrailerValidDataEnable | kTrailerValidData | kTrailerOverRangeEnable | kTrailerSampleLossEnable;
  if (p.over_range) trailer |= kTrailerOverRange;
  if (p.sample_loss) trailer |= kTrailerSampleLoss;
  if (p.time_step) trailer |= kTrailerTimeStepEnable | kTrailerTimeStep;
  put32(w, trailer);
  return bytes;
}

size_t encode_context(const ContextPacket& p, uint8_t* out, size_t cap) noexcept {
  if (cap < kContextBytes) return 0;
  uint8_t* w = out;
  put_prologue(w, PacketType::kContext, false, p.packet_count, kContextBytes / 4, p.stream_id, kPacketClassContext,
               p.ts_int, p.ts_frac_ps);
  put32(w, (p.changed ? kCifChange : 0u) | kCifSampleRate | kCifPayloadFormat);
  // Fields follow in descending CIF0 bit order: sample rate (bit 21), then payload format (bit 15).
  put64(w, uint64_t(int64_t(p.sample_rate_hz * double(1 << 20) + 0.5)));  // Hz, radix point at bit 20
  put64(w, kFloat32PayloadFormat);
  return kContextBytes;
}

float Decoded::sample(size_t i) const noexcept { return std::bit_cast<float>(get32(payload + 4 * i)); }

void Decoded::copy_samples(size_t first, size_t n, float* out) const noexcept {
  simd::byteswap32(payload + 4 * first, out, n);
}

bool decode(const uint8_t* d, size_t size, Decoded& o, std::string* why) noexcept {
  auto fail = [&](const char* msg) {
    if (why) *why = msg;
    return false;
  };
  if (size < 8 || size % 4 != 0) return fail("datagram shorter than 8 bytes or not a whole number of words");
  const uint32_t h = get32(d);
  const uint32_t type = h >> 28;
  if (type != 1 && type != 4) return fail("unsupported packet type (expected 1: data with stream id, or 4: context)");
  if ((h & 0xFFFF) * 4 != size) return fail("packet size field does not match the datagram length");
  o = Decoded{};
  o.type = PacketType(type);
  o.has_class_id = (h >> 27) & 1;
  o.has_trailer = type == 1 && ((h >> 26) & 1);
  o.tsi = uint8_t((h >> 22) & 3);
  o.tsf = uint8_t((h >> 20) & 3);
  o.packet_count = uint8_t((h >> 16) & 0xF);
  size_t at = 4;
  const size_t need = 8 + (o.has_class_id ? 8 : 0) + (o.tsi ? 4 : 0) + (o.tsf ? 8 : 0) + (o.has_trailer ? 4 : 0);
  if (size < need) return fail("packet too short for its header fields");
  o.stream_id = get32(d + at);
  at += 4;
  if (o.has_class_id) {
    o.oui = get32(d + at) & 0xFFFFFF;
    o.info_class = uint16_t(get32(d + at + 4) >> 16);
    o.packet_class = uint16_t(get32(d + at + 4));
    at += 8;
  }
  if (o.tsi) {
    o.ts_int = get32(d + at);
    at += 4;
  }
  if (o.tsf) {
    o.ts_frac = get64(d + at);
    at += 8;
  }
  const size_t end = size - (o.has_trailer ? 4 : 0);
  if (o.has_trailer) o.trailer = get32(d + end);
  if (type == 1) {
    o.payload = d + at;
    o.samples = (end - at) / 4;
    return true;
  }
  if (end - at < 4) return fail("context packet without a CIF0 word");
  o.cif0 = get32(d + at);
  at += 4;
  // CIF1, CIF2, CIF3 and CIF7 words, where enabled, follow CIF0 before any field.
  for (const uint32_t bit : {1u, 2u, 3u, 7u})
    if (o.cif0 & (1u << bit)) at += 4;
  // The fields before the two read here, in descending bit order, and their sizes in words
  // (VITA 49.2 table 9.1-1): skipped, so that a digitizer's context packet reads too.
  auto skip = [&](uint32_t from_bit, uint32_t to_bit) {
    static constexpr uint8_t kWords[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           1, 2, 1, 1, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 1, 0};
    for (uint32_t bit = from_bit; bit > to_bit; --bit)
      if (o.cif0 & (1u << bit)) at += 4 * size_t(kWords[bit]);
  };
  skip(30, 21);
  if (at > end) return fail("context packet truncated before the sample rate field");
  if (o.cif0 & kCifSampleRate) {
    if (end - at < 8) return fail("context packet truncated in the sample rate field");
    o.has_sample_rate = true;
    o.sample_rate_hz = double(int64_t(get64(d + at))) / double(1 << 20);
    at += 8;
  }
  skip(20, 15);
  if (at > end) return fail("context packet truncated before the payload format field");
  if (o.cif0 & kCifPayloadFormat) {
    if (end - at < 8) return fail("context packet truncated in the payload format field");
    o.has_payload_format = true;
    o.payload_format = get64(d + at);
    at += 8;
  }
  return true;
}

bool payload_sample_format(uint64_t f, SampleFormat& format, std::string* why) noexcept {
  const uint32_t w = uint32_t(f >> 32);
  const uint32_t real_complex = (w >> 29) & 3, item_format = (w >> 24) & 0x1F;
  const uint32_t packing_bits = ((w >> 6) & 0x3F) + 1, item_bits = (w & 0x3F) + 1;
  const uint32_t tags = (w >> 16) & 0x7F;  // event and channel tag sizes
  auto no = [&](const char* msg) {
    if (why) *why = msg;
    return false;
  };
  if (real_complex != 0) return no("complex samples (only real samples are read)");
  if (tags) return no("event or channel tags in the samples");
  if (item_bits != packing_bits) return no("samples packed in wider fields than their size");
  if (item_format == 0x0E && item_bits == 32) format = SampleFormat::kFloat32;
  else if (item_format == 0 && item_bits == 16) format = SampleFormat::kInt16;
  else if (item_format == 0 && item_bits == 32) format = SampleFormat::kInt32;
  else return no("a sample format other than signed 16- or 32-bit fixed point or 32-bit IEEE float");
  return true;
}

std::string stream_id_hex(uint32_t stream_id) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", stream_id);
  return b;
}

}  // namespace vigil::vita49
