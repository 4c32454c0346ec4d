// AlsaSpec: what the config asks of an ALSA capture device (always compiled, so configs parse on
// machines built without ALSA; the source itself needs VIGIL_HAVE_ALSA).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

enum class AlsaFormat : uint8_t { kS16Le, kS24_3Le, kS32Le, kFloatLe };

std::optional<AlsaFormat> parse_alsa_format(std::string_view name) noexcept;  // "S16_LE", ...
const char* to_string(AlsaFormat f) noexcept;

struct AlsaSpec {
  std::string device = "default";  // hw:1,0, plughw:..., default, or any PCM name
  double rate_hz = 48000;
  uint32_t channels = 2;
  AlsaFormat format = AlsaFormat::kS16Le;
  uint32_t period_frames = 1024;   // one chunk per period
  uint32_t buffer_frames = 4096;   // the device's ring (>= 2 periods)
  bool strict = false;             // refuse a device that grants another rate/period/buffer
  double duration_s = 0;           // > 0: end after this much signal (tests, fixed-length captures)
  bool operator==(const AlsaSpec&) const = default;
};

}  // namespace vigil
