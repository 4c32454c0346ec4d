// Sample formats of captured chunks: the small shared type that acquisition/, dsp/ and cuda/ agree on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vigil {

enum class SampleFormat : uint8_t { kInt16 = 0, kInt32 = 1, kFloat32 = 2 };

constexpr size_t bytes_per_sample(SampleFormat f) noexcept {
  return f == SampleFormat::kInt16 ? 2 : 4;
}

constexpr std::string_view to_string(SampleFormat f) noexcept {
  switch (f) {
    case SampleFormat::kInt16: return "int16";
    case SampleFormat::kInt32: return "int32";
    case SampleFormat::kFloat32: return "float32";
  }
  return "?";
}

constexpr std::optional<SampleFormat> parse_sample_format(std::string_view s) noexcept {
  if (s == "int16") return SampleFormat::kInt16;
  if (s == "int32") return SampleFormat::kInt32;
  if (s == "float32") return SampleFormat::kFloat32;
  return std::nullopt;
}

// The scale that maps a format's full-scale code to 1.0f (int16: 1/32768, int32: 1/2^31).
constexpr float full_scale_factor(SampleFormat f) noexcept {
  switch (f) {
    case SampleFormat::kInt16: return 1.0f / 32768.0f;
    case SampleFormat::kInt32: return 1.0f / 2147483648.0f;
    case SampleFormat::kFloat32: return 1.0f;
  }
  return 1.0f;
}

}  // namespace vigil
