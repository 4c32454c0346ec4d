// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex, by libcrypto (OpenSSL's EVP): the
// config's hash written into each recording's metadata, so an operator can match a recording to
// its config with `sha256sum`.
// Thread: any (not for the real-time path).
#pragma once

#include <string>
#include <string_view>

namespace vigil {

std::string sha256_hex(std::string_view bytes);

}  // namespace vigil
