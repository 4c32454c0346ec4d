#include "acquisition/alsa_spec.hpp"

namespace vigil {

std::optional<AlsaFormat> parse_alsa_format(std::string_view name) noexcept {
  if (name == "S16_LE") return AlsaFormat::kS16Le;
  if (name == "S24_3LE") return AlsaFormat::kS24_3Le;
  if (name == "S32_LE") return AlsaFormat::kS32Le;
  if (name == "FLOAT_LE") return AlsaFormat::kFloatLe;
  return std::nullopt;
}

const char* to_string(AlsaFormat f) noexcept {
  switch (f) {
    case AlsaFormat::kS16Le: return "S16_LE";
    case AlsaFormat::kS24_3Le: return "S24_3LE";
    case AlsaFormat::kS32Le: return "S32_LE";
    case AlsaFormat::kFloatLe: return "FLOAT_LE";
  }
  return "?";
}

}  // namespace vigil
