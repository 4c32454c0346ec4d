// The stream id of a lane of a data output in Vigil's VITA 49 streams (docs/PROTOCOL.md): the
// output's index, the band and the channel in one 32-bit word.
#pragma once

#include <cstdint>

#include "core/stream_format.hpp"

namespace vigil {

static_assert(kMaxChannels <= 0x1000, "a stream id holds the channel in 12 bits");

constexpr uint32_t stream_id(uint32_t output_index, uint32_t band, uint32_t channel) noexcept {
  return (output_index & 0xFF) << 24 | (band & 0xFFF) << 12 | (channel & 0xFFF);
}

}  // namespace vigil
